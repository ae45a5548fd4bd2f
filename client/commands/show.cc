// trainctl show ID: one job's spec, state, timings and result.
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/render/job_text.h"
#include "client/rpc.h"

namespace traind {

void AddShowCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto job_id = std::make_shared<int64_t>(0);
  CLI::App* cmd = app.add_subcommand("show", "Show one job: spec, state, timings and result");
  cmd->add_option("id", *job_id, "Job id")->required();
  cmd->callback([&ctx, exit_code, job_id] {
    trainer::v1::GetJobRequest request;
    request.set_id(*job_id);
    trainer::v1::Job job;
    auto call = UnaryCall();
    grpc::Status status = ctx.stub().GetJob(call.get(), request, &job);
    if (!status.ok()) {
      *exit_code = ctx.Fail(status);
      return;
    }
    if (ctx.json()) {
      ctx.PrintJson(job);
    } else {
      ctx.out() << DescribeJob(job);
    }
    *exit_code = kExitOk;
  });
}

}  // namespace traind
