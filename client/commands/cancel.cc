// trainctl cancel ID... | --sweep N: cancel queued jobs at once, stop running ones (SIGTERM, then
// SIGKILL). --sweep cancels every member of the sweep that has not ended.
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/rpc.h"
#include "client/sweep_members.h"

namespace traind {

namespace {

struct CancelFlags {
  std::vector<int64_t> ids;
  std::string sweep;  // an id or a name
};

int CancelJobs(Context& ctx, const std::vector<int64_t>& ids) {
  int worst = kExitOk;
  for (int64_t id : ids) {
    trainer::v1::CancelJobRequest request;
    request.set_id(id);
    trainer::v1::Job job;
    auto call = UnaryCall();
    grpc::Status status = ctx.stub().CancelJob(call.get(), request, &job);
    if (!status.ok()) {
      worst = std::max(worst, ctx.Fail(status));
      continue;
    }
    if (ctx.json()) {
      ctx.PrintJson(job, /*one_line=*/true);
    } else if (job.state() == trainer::v1::Job::RUNNING) {
      ctx.out() << "job " << id << ": stopping (it was running)\n";
    } else if (job.state() == trainer::v1::Job::CANCELLED) {
      ctx.out() << "job " << id << ": cancelled\n";
    } else {
      ctx.out() << "job " << id << ": " << trainer::v1::Job::State_Name(job.state()) << "\n";
    }
  }
  return worst;
}

int RunCancel(Context& ctx, const CancelFlags& flags) {
  if (flags.ids.empty() == flags.sweep.empty()) {
    return ctx.UsageError("cancel: give job ids or --sweep N (one of them)");
  }
  if (flags.sweep.empty()) return CancelJobs(ctx, flags.ids);
  int64_t sweep_id = 0;
  if (int code = SweepId(ctx, flags.sweep, &sweep_id); code != kExitOk) return code;
  std::vector<trainer::v1::Job> members;
  if (grpc::Status status = ListSweepMembers(
          ctx.stub(), sweep_id,
          {trainer::v1::Job::QUEUED, trainer::v1::Job::RUNNING, trainer::v1::Job::PAUSED},
          &members);
      !status.ok()) {
    return ctx.Fail(status);
  }
  trainer::v1::GetSweepRequest get;
  get.set_id(sweep_id);
  trainer::v1::Sweep sweep;
  auto read = UnaryCall();
  if (grpc::Status status = ctx.stub().GetSweep(read.get(), get, &sweep); !status.ok()) {
    return ctx.Fail(status);
  }
  const bool search_goes_on = sweep.spec().has_search() && !sweep.search_done();
  if (members.empty() && !search_goes_on) {
    ctx.err() << "sweep " << sweep_id << ": every member had already ended\n";
    return kExitOk;
  }
  // The daemon cancels the sweep as one: a search stops proposing trials first.
  trainer::v1::CancelSweepRequest request;
  request.set_id(sweep_id);
  auto call = UnaryCall();
  const grpc::Status cancelled = ctx.stub().CancelSweep(call.get(), request, &sweep);
  if (cancelled.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    // A daemon from before CancelSweep: its members one by one.
    std::vector<int64_t> ids;
    for (const trainer::v1::Job& job : members) ids.push_back(job.id());
    return CancelJobs(ctx, ids);
  }
  if (!cancelled.ok()) return ctx.Fail(cancelled);
  if (search_goes_on) ctx.err() << "search " << sweep_id << ": proposes no more trials\n";
  for (const trainer::v1::Job& job : members) {
    ctx.out() << "job " << job.id() << ": "
              << (job.state() == trainer::v1::Job::RUNNING ? "stopping (it was running)"
                                                           : "cancelled")
              << "\n";
  }
  return kExitOk;
}

}  // namespace

void AddCancelCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<CancelFlags>();
  CLI::App* cmd = app.add_subcommand("cancel", "Cancel jobs (queued: at once; running: stopped)");
  cmd->add_option("ids", flags->ids, "Job ids");
  cmd->add_option("--sweep", flags->sweep,
                  "Every member of this sweep (its id or name) that is queued, paused or running "
                  "instead; a search proposes no more trials");
  cmd->footer(
      "Examples:\n"
      "  trainctl cancel 12\n"
      "  trainctl cancel 12 13 14\n"
      "  trainctl cancel --sweep 3");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunCancel(ctx, *flags); });
}

}  // namespace traind
