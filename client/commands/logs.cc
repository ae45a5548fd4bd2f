// trainctl logs ID: the job's history in the reference scripts' format, line for line, with the
// job's own notes (log lines: its start-up phases, device settings, a resumption) where they came.
// A program's job (trainctl run) shows the program's own output, as it printed it.
// With --follow it keeps going until the job ends (like `watch` without the progress bar).
#include <deque>
#include <sstream>

#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/render/event_renderer.h"
#include "client/stored_events.h"
#include "common/cli_checks.h"
#include "common/log_format.h"

namespace traind {

namespace {

struct LogsFlags {
  int64_t job_id = 0;
  bool follow = false;
  int tail = 0;  // 0: every line
};

int RunLogs(Context& ctx, const LogsFlags& flags) {
  int64_t last_seq = 0;
  const bool program_output = !ctx.json() && IsProgramJob(ctx, flags.job_id);
  // With --tail, only the last lines are kept while the log is read, however long it is.
  std::deque<std::string> lines;
  auto keep = [&](std::string line) {
    lines.push_back(std::move(line));
    if (flags.tail > 0 && static_cast<int>(lines.size()) > flags.tail) lines.pop_front();
  };
  const grpc::Status status =
      ForEachStoredEvent(ctx.stub(), flags.job_id, [&](const trainer::v1::JobEvent& event) {
        last_seq = event.seq();
        if (ctx.json()) {
          std::ostringstream json;
          Context one(ctx.WithOutput(json, false));
          one.PrintJson(event, /*one_line=*/true);
          keep(json.str());
        } else if (!(program_output && EchoesProgramOutput(event))) {
          for (std::string& line : FormatEventLines(event)) keep(std::move(line) + "\n");
        }
        if (flags.tail == 0) {  // nothing to hold back: print as it comes
          for (const std::string& line : lines) ctx.out() << line;
          lines.clear();
        }
      });
  if (!status.ok()) return ctx.Fail(status);
  for (const std::string& line : lines) ctx.out() << line;
  ctx.out().flush();
  if (flags.follow) {
    return WatchJob(ctx, flags.job_id, last_seq + 1,
                    ctx.json() ? RenderMode::kJson : RenderMode::kPlain);
  }
  return kExitOk;
}

}  // namespace

void AddLogsCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<LogsFlags>();
  CLI::App* cmd = app.add_subcommand(
      "logs", "Print a job's log in the reference scripts' format (Epoch/Batch/Loss lines)");
  cmd->add_option("id", flags->job_id, "Job id")->required();
  cmd->add_flag("--follow,-f", flags->follow, "Keep printing until the job ends");
  cmd->add_option("--tail,-n", flags->tail, "Only the last N lines (then --follow's new ones)")
      ->check(NumberAtLeast(0, /*strictly=*/false));
  cmd->footer(
      "Examples:\n"
      "  trainctl logs 12\n"
      "  trainctl logs 12 --tail 20 --follow");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunLogs(ctx, *flags); });
}

}  // namespace traind
