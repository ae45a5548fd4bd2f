// trainctl priority ID N: change a queued job's priority (higher runs first; equal priorities run
// oldest first). A job that has started keeps its place: FAILED_PRECONDITION, exit 2.
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/rpc.h"

namespace traind {

void AddPriorityCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto id = std::make_shared<int64_t>(0);
  auto priority = std::make_shared<int32_t>(0);
  CLI::App* cmd = app.add_subcommand("priority", "Change a queued job's priority");
  cmd->footer(
      "Examples:\n  trainctl priority 42 10    # run job 42 before priority-0 jobs\n"
      "  trainctl priority 42 -5    # let everything else go first");
  cmd->add_option("id", *id, "Job id")->required();
  cmd->add_option("priority", *priority, "New priority (any integer; default of jobs: 0)")
      ->required();
  cmd->callback([&ctx, exit_code, id, priority] {
    trainer::v1::SetJobPriorityRequest request;
    request.set_id(*id);
    request.set_priority(*priority);
    trainer::v1::Job job;
    auto call = UnaryCall();
    const grpc::Status status = ctx.stub().SetJobPriority(call.get(), request, &job);
    if (!status.ok()) {
      *exit_code = ctx.Fail(status);
      return;
    }
    if (ctx.json()) {
      ctx.PrintJson(job, /*one_line=*/true);
    } else {
      ctx.out() << "job " << job.id() << ": priority " << job.priority() << "\n";
    }
    *exit_code = kExitOk;
  });
}

}  // namespace traind
