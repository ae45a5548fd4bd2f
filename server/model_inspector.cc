#include "server/model_inspector.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "supervise/worker_process.h"

namespace traind {

absl::StatusOr<std::string> InspectModel(const std::string& worker_path, const std::string& path) {
  trainer::v1::WorkerRequest request;
  request.set_inspect_model(path);
  absl::StatusOr<std::unique_ptr<WorkerProcess>> worker =
      WorkerProcess::Start(worker_path, request);
  if (!worker.ok()) return worker.status();
  const absl::Time deadline = absl::Now() + absl::Minutes(1);
  std::optional<trainer::v1::LogLine> answer;
  while (true) {
    trainer::v1::JobEvent event;
    const auto result = (*worker)->ReadEvent(&event, absl::Seconds(1));
    if (result == WorkerProcess::ReadResult::kEnd) break;
    if (result == WorkerProcess::ReadResult::kEvent && event.has_log()) answer = event.log();
    if (absl::Now() > deadline) {
      (*worker)->Kill();
      (void)(*worker)->Wait();
      return absl::DeadlineExceededError("model_file: inspecting the model took over a minute");
    }
  }
  const WorkerProcess::Exit exit = (*worker)->Wait();
  if (!answer.has_value()) {
    return absl::InternalError(absl::StrCat(
        "model_file: the worker inspecting it ended without an answer: ", exit.Describe()));
  }
  if (answer->severity() == trainer::v1::LogLine::ERROR) {
    return absl::InvalidArgumentError(answer->text());
  }
  return answer->text();
}

}  // namespace traind
