// trainctl artifacts ID: the files a job kept (final and best weights) with size and SHA-256.
#include "absl/strings/str_format.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/rpc.h"
#include "common/terminal_text.h"

namespace traind {

void AddArtifactsCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto id = std::make_shared<int64_t>(0);
  CLI::App* cmd = app.add_subcommand(
      "artifacts", "List a job's trained weights (final, best): name, size, SHA-256");
  cmd->footer("Example:\n  trainctl artifacts 7\n  trainctl download 7 best -o lenet5.pt");
  cmd->add_option("id", *id, "Job id")->required();
  cmd->callback([&ctx, exit_code, id] {
    trainer::v1::ListArtifactsRequest request;
    request.set_id(*id);
    trainer::v1::ListArtifactsResponse response;
    auto call = UnaryCall();
    grpc::Status status = ctx.stub().ListArtifacts(call.get(), request, &response);
    if (!status.ok()) {
      *exit_code = ctx.Fail(status);
      return;
    }
    *exit_code = kExitOk;
    if (ctx.json()) {
      ctx.PrintJson(response);
      return;
    }
    if (response.artifacts().empty()) {
      ctx.out() << "job " << *id << " has no artifacts (yet): they are written after evaluated "
                << "epochs (best) and at the end (final)\n";
      return;
    }
    ctx.out() << absl::StrFormat("%-8s %-12s %12s  %-6s %-9s %s\n", "NAME", "FORMAT", "BYTES",
                                 "EPOCH", "VAL ACC", "SHA-256");
    for (const trainer::v1::Artifact& a : response.artifacts()) {
      ctx.out() << absl::StrFormat(
          "%-8s %-12s %12d  %-6d %-9s %s\n", TerminalSafe(a.name()), TerminalSafe(a.format()),
          a.size_bytes(), a.epoch(),
          a.name() == "final" ? "" : absl::StrFormat("%.2f%%", a.validation_accuracy() * 100),
          TerminalSafe(a.sha256()));
    }
  });
}

}  // namespace traind
