// trainctl artifacts ID: the files a job kept (final and best weights; a program's files of
// TRAIND_OUTPUT_DIR) with size and SHA-256.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/rpc.h"
#include "common/terminal_text.h"

namespace traind {

void AddArtifactsCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto id = std::make_shared<int64_t>(0);
  CLI::App* cmd = app.add_subcommand(
      "artifacts",
      "List the files a job kept: trained weights (final, best), or the files a program wrote to "
      "TRAIND_OUTPUT_DIR; name, size, SHA-256");
  cmd->footer(
      "Examples:\n  trainctl artifacts 7\n  trainctl download 7 best -o lenet5.pt\n"
      "  trainctl download 12 plots/loss.png     # a file a program wrote");
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
      ctx.out() << "job " << *id << " has no artifacts (yet): built-in jobs keep weights after "
                << "evaluated epochs (best) and at the end (final); programs keep the files they "
                << "wrote to TRAIND_OUTPUT_DIR when they end\n";
      return;
    }
    int name_width = 8;
    for (const trainer::v1::Artifact& a : response.artifacts()) {
      name_width = std::max(name_width, std::min(48, static_cast<int>(a.name().size())));
    }
    ctx.out() << absl::StrFormat("%-*s %-12s %12s  %-6s %-9s %s\n", name_width, "NAME", "FORMAT",
                                 "BYTES", "EPOCH", "VAL ACC", "SHA-256");
    for (const trainer::v1::Artifact& a : response.artifacts()) {
      // A program's files have no epoch; final weights are not evaluated again.
      const bool evaluated = a.epoch() > 0 && a.name() != "final";
      ctx.out() << absl::StrFormat(
          "%-*s %-12s %12d  %-6s %-9s %s\n", name_width, TerminalSafe(a.name()),
          TerminalSafe(a.format()), a.size_bytes(), a.epoch() > 0 ? absl::StrCat(a.epoch()) : "",
          evaluated ? absl::StrFormat("%.2f%%", a.validation_accuracy() * 100) : "",
          TerminalSafe(a.sha256()));
    }
  });
}

}  // namespace traind
