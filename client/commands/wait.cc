// trainctl wait ID... | --sweep N [--timeout SECONDS]: block until the jobs have ended, for shell
// scripts (`trainctl wait 12 13 && trainctl report 4`). Exit 0 when every one succeeded, 1 when
// any failed or was cancelled (each such job named on stderr), 4 when --timeout passed first.
// Prints nothing on stdout unless -o json (the jobs as they ended, one line each).
#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/interrupt_notice.h"
#include "client/rpc.h"
#include "client/sweep_members.h"
#include "common/cli_checks.h"
#include "common/log_format.h"

namespace traind {

namespace {

using trainer::v1::Job;

struct WaitFlags {
  std::vector<int64_t> ids;
  std::string sweep;           // an id or a name
  double timeout_seconds = 0;  // 0: no limit
};

bool Ended(Job::State state) {
  return state == Job::SUCCEEDED || state == Job::FAILED || state == Job::CANCELLED;
}

// The jobs waited for, as they stand now.
grpc::Status ReadJobs(Context& ctx, const WaitFlags& flags, int64_t sweep_id,
                      std::vector<Job>* jobs) {
  if (sweep_id > 0) return ListSweepMembers(ctx.stub(), sweep_id, {}, jobs);
  jobs->clear();
  for (int64_t id : flags.ids) {
    trainer::v1::GetJobRequest request;
    request.set_id(id);
    Job job;
    auto call = UnaryCall();
    if (grpc::Status status = ctx.stub().GetJob(call.get(), request, &job); !status.ok()) {
      return status;
    }
    jobs->push_back(std::move(job));
  }
  return grpc::Status::OK;
}

int ExitCodeOf(Context& ctx, const std::vector<Job>& jobs) {
  int code = kExitOk;
  for (const Job& job : jobs) {
    if (ctx.json()) ctx.PrintJson(job, /*one_line=*/true);
    if (job.state() != Job::SUCCEEDED) {
      ctx.err() << "trainctl: job " << job.id() << " " << StateName(job.state()) << "\n";
      code = kExitJobFailed;
    }
  }
  return code;
}

int RunWait(Context& ctx, const WaitFlags& flags) {
  if (flags.ids.empty() == flags.sweep.empty()) {
    return ctx.UsageError("wait: give job ids or --sweep N (one of them)");
  }
  int64_t sweep_id = 0;
  if (!flags.sweep.empty()) {
    if (int code = SweepId(ctx, flags.sweep, &sweep_id); code != kExitOk) return code;
  }
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(flags.timeout_seconds * 1000));
  const std::string waited_for =
      flags.ids.size() == 1
          ? absl::StrCat("job ", flags.ids[0], " keeps running")
          : absl::StrCat("jobs ", absl::StrJoin(flags.ids, ", "), " keep running");
  const InterruptNotice notice(
      sweep_id > 0 ? SweepKeepsRunning(sweep_id) : absl::StrCat("stopped waiting; ", waited_for),
      /*after_progress_bar=*/false);
  auto pause = std::chrono::milliseconds(100);
  while (true) {
    std::vector<Job> jobs;
    if (grpc::Status status = ReadJobs(ctx, flags, sweep_id, &jobs); !status.ok())
      return ctx.Fail(status);
    bool grows = false;  // a search that may still propose members
    if (sweep_id > 0) {
      if (grpc::Status status = SweepGrows(ctx.stub(), sweep_id, &grows); !status.ok()) {
        return ctx.Fail(status);
      }
    }
    if (!grows &&
        std::all_of(jobs.begin(), jobs.end(), [](const Job& j) { return Ended(j.state()); })) {
      return ExitCodeOf(ctx, jobs);
    }
    if (flags.timeout_seconds > 0 && std::chrono::steady_clock::now() >= deadline) {
      ctx.err() << "trainctl: wait: --timeout " << flags.timeout_seconds
                << " s passed; the jobs keep running\n";
      return kExitTimedOut;
    }
    // Quick for short jobs, at most one call a second for long ones.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
}

}  // namespace

void AddWaitCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<WaitFlags>();
  CLI::App* cmd = app.add_subcommand(
      "wait", "Wait until jobs end: exit 0 if all succeeded, 1 if any failed or was cancelled");
  cmd->add_option("ids", flags->ids, "Job ids");
  cmd->add_option("--sweep", flags->sweep, "Every member of this sweep (its id or name) instead");
  cmd->add_option("--timeout", flags->timeout_seconds,
                  "Give up after this many seconds (exit 4; the jobs go on)")
      ->check(NumberAtLeast(0, /*strictly=*/false));
  cmd->footer(
      "Examples:\n"
      "  trainctl wait 12 13 && echo both succeeded\n"
      "  trainctl wait --sweep 3 --timeout 3600\n"
      "Exit codes: 0 all succeeded, 1 one failed or was cancelled, 2 bad usage, 3 traind "
      "unreachable, 4 --timeout passed.");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunWait(ctx, *flags); });
}

}  // namespace traind
