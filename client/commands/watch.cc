// trainctl watch ID [--from-seq N]: follow a job live until it ends; exit 0 if it succeeded.
// If the connection drops (the daemon restarts), reconnects with backoff from the last seq seen,
// so every event is shown once, in order.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/interrupt_notice.h"
#include "client/render/event_renderer.h"
#include "client/rpc.h"
#include "common/cli_checks.h"
#include "common/log_format.h"

namespace traind {

namespace {

using trainer::v1::Job;

constexpr auto kGiveUpAfter = std::chrono::minutes(10);

bool IsTerminal(Job::State s) {
  return s == Job::SUCCEEDED || s == Job::FAILED || s == Job::CANCELLED;
}

bool Reconnectable(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::CANCELLED ||
         status.error_code() == grpc::StatusCode::INTERNAL;
}

struct WatchFlags {
  int64_t job_id = 0;
  int64_t from_seq = 0;
  std::string sweep;  // an id or a name
};

}  // namespace

bool IsProgramJob(Context& ctx, int64_t job_id) {
  trainer::v1::GetJobRequest request;
  request.set_id(job_id);
  Job job;
  auto call = UnaryCall();
  return ctx.stub().GetJob(call.get(), request, &job).ok() && job.spec().has_script();
}

int WatchJob(Context& ctx, int64_t job_id, int64_t from_seq, std::optional<RenderMode> mode) {
  if (!mode.has_value()) {
    mode = ctx.json()              ? RenderMode::kJson
           : ctx.out_is_terminal() ? RenderMode::kProgressBar
                                   : RenderMode::kPlain;
  }
  std::unique_ptr<EventRenderer> renderer =
      MakeEventRenderer(*mode, job_id, ctx.out(), ctx.err(), IsProgramJob(ctx, job_id));
  const InterruptNotice notice(JobKeepsRunning(job_id), *mode == RenderMode::kProgressBar);
  int64_t next_seq = std::max<int64_t>(from_seq, 1);
  Job::State final_state = Job::STATE_UNSPECIFIED;
  bool ever_connected = false;
  auto backoff = std::chrono::milliseconds(250);
  auto lost_since = std::chrono::steady_clock::time_point{};

  while (true) {
    grpc::ClientContext call;
    trainer::v1::WatchJobRequest request;
    request.set_id(job_id);
    request.set_from_seq(next_seq);
    auto reader = ctx.stub().WatchJob(&call, request);
    trainer::v1::JobEvent event;
    while (reader->Read(&event)) {
      ever_connected = true;
      lost_since = {};
      backoff = std::chrono::milliseconds(250);
      renderer->OnEvent(event);
      next_seq = event.seq() + 1;
      if (event.has_state_change() && IsTerminal(event.state_change().state())) {
        final_state = event.state_change().state();
      }
    }
    const grpc::Status status = reader->Finish();
    if (status.ok()) break;
    if (!ever_connected || !Reconnectable(status)) {
      renderer->Close();
      return ctx.Fail(status);
    }
    const auto now = std::chrono::steady_clock::now();
    if (lost_since == std::chrono::steady_clock::time_point{}) {
      lost_since = now;
      renderer->OnNote(absl::StrCat("trainctl: lost traind (", status.error_message(),
                                    "); reconnecting from event ", next_seq, "..."));
    } else if (now - lost_since > kGiveUpAfter) {
      renderer->Close();
      return ctx.Fail(status);
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
  renderer->Close();

  if (final_state == Job::STATE_UNSPECIFIED) {  // started past the end of a finished job
    Job job;
    trainer::v1::GetJobRequest get;
    get.set_id(job_id);
    auto call = UnaryCall();
    grpc::Status status = ctx.stub().GetJob(call.get(), get, &job);
    if (!status.ok()) return ctx.Fail(status);
    final_state = job.state();
  }
  return final_state == Job::SUCCEEDED ? kExitOk : kExitJobFailed;
}

void AddWatchCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<WatchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "watch", "Follow a job live until it ends (exit 0 if it succeeded, 1 if not)");
  cmd->add_option("id", flags->job_id, "Job id");
  cmd->add_option("--sweep", flags->sweep,
                  "Follow every member of this sweep (its id or name) instead");
  cmd->add_option("--from-seq", flags->from_seq, "Start at this event (default: the first)")
      ->check(AtLeast(0));
  cmd->callback([&ctx, exit_code, flags] {
    int64_t sweep_id = 0;
    if (!flags->sweep.empty()) {
      *exit_code = SweepId(ctx, flags->sweep, &sweep_id);
      if (*exit_code == kExitOk) *exit_code = WatchSweep(ctx, sweep_id);
    } else if (flags->job_id > 0) {
      *exit_code = WatchJob(ctx, flags->job_id, flags->from_seq);
    } else {
      *exit_code = ctx.UsageError("watch: give a job id, or --sweep ID");
    }
  });
}

}  // namespace traind
