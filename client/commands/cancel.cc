// trainctl cancel ID...: cancel queued jobs at once, stop running ones (SIGTERM, then SIGKILL).
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/rpc.h"

namespace traind {

void AddCancelCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto ids = std::make_shared<std::vector<int64_t>>();
  CLI::App* cmd = app.add_subcommand("cancel", "Cancel jobs (queued: at once; running: stopped)");
  cmd->add_option("ids", *ids, "Job ids")->required();
  cmd->callback([&ctx, exit_code, ids] {
    int worst = kExitOk;
    for (int64_t id : *ids) {
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
      } else {
        ctx.out() << "job " << id << ": cancelled\n";
      }
    }
    *exit_code = worst;
  });
}

}  // namespace traind
