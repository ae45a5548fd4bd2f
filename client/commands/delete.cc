// trainctl delete ID...: remove finished jobs with their events, their directory (checkpoint,
// artifacts) and the uploaded files no other job uses. Queued or running jobs are refused
// (cancel them first), and so are sweep members (their sweep's report needs them).
#include "absl/strings/str_format.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/rpc.h"

namespace traind {

void AddDeleteCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto ids = std::make_shared<std::vector<int64_t>>();
  auto force = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "delete", "Remove finished jobs: events, files, and uploads nothing else uses");
  cmd->footer(
      "Examples:\n  trainctl delete 12 13 14\n  trainctl list   # DISK: what each job holds\n"
      "  trainctl delete --force 12   # even if a queued job waits for it (that job will fail)");
  cmd->add_option("ids", *ids, "Job ids")->required();
  cmd->add_flag("--force", *force,
                "Delete even jobs that queued or running jobs need (--after, --init-from)");
  cmd->callback([&ctx, exit_code, ids, force] {
    int worst = kExitOk;
    for (int64_t id : *ids) {
      trainer::v1::DeleteJobRequest request;
      request.set_id(id);
      request.set_force(*force);
      trainer::v1::DeleteJobResponse response;
      auto call = UnaryCall();
      grpc::Status status = ctx.stub().DeleteJob(call.get(), request, &response);
      if (!status.ok()) {
        worst = std::max(worst, ctx.Fail(status));
        continue;
      }
      if (ctx.json()) {
        ctx.PrintJson(response, /*one_line=*/true);
        continue;
      }
      ctx.out() << absl::StrFormat(
          "job %d: deleted, %.1f MB freed%s\n", id, response.freed_bytes() / 1e6,
          response.removed_blobs_size() > 0
              ? absl::StrFormat(" (with %d upload(s) no job uses)", response.removed_blobs_size())
              : "");
    }
    *exit_code = worst;
  });
}

}  // namespace traind
