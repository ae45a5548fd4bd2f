// trainctl download ID [NAME] [-o PATH] [--force]: fetch one of a job's artifacts (default best;
// a program's file by its path in TRAIND_OUTPUT_DIR), verified against its SHA-256; an existing
// file is kept unless --force.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/file_transfer.h"
#include "common/artifact_names.h"
#include "common/grpc_status.h"
#include "common/terminal_text.h"

namespace traind {

namespace {

struct DownloadFlags {
  int64_t id = 0;
  std::string name = "best";
  std::string output;
  bool force = false;
};

}  // namespace

void AddDownloadCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<DownloadFlags>();
  CLI::App* cmd = app.add_subcommand(
      "download",
      "Fetch a job's trained weights or a file its program wrote (checked against its SHA-256)");
  cmd->footer(
      "Examples:\n"
      "  trainctl download 7                  # best weights -> job7-best.pt\n"
      "  trainctl download 7 final -o net.pt\n"
      "  trainctl download 12 plots/loss.png  # a program's file -> job12-loss.png\n"
      "Built-in models: a state dict (torch.load, then model.load_state_dict); TorchScript\n"
      "jobs: the trained module (torch.jit.load).");
  cmd->add_option("id", flags->id, "Job id")->required();
  cmd->add_option("name", flags->name,
                  "best (default) | final | a program's file by its path (trainctl artifacts ID)")
      ->capture_default_str();
  cmd->add_option("-o,--output", flags->output,
                  "Where to write it (default jobID-NAME.pt, or jobID-FILE for a program's file)");
  cmd->add_flag("--force", flags->force, "Overwrite an existing file");
  cmd->callback([&ctx, exit_code, flags] {
    const std::string output =
        flags->output.empty() ? DefaultDownloadName(flags->id, flags->name) : flags->output;
    absl::StatusOr<trainer::v1::Artifact> artifact =
        DownloadArtifact(ctx.stub(), flags->id, flags->name, output, flags->force, ctx.err());
    if (!artifact.ok()) {
      if (absl::IsAlreadyExists(artifact.status())) {
        *exit_code = ctx.UsageError(std::string(artifact.status().message()));
      } else {
        *exit_code = ctx.Fail(ToGrpcStatus(artifact.status()));
      }
      return;
    }
    *exit_code = kExitOk;
    if (ctx.json()) {
      ctx.PrintJson(*artifact);
      return;
    }
    ctx.out() << absl::StrFormat("%s: %s of job %d (%s, %d bytes, sha256 %s)\n", output,
                                 TerminalSafe(artifact->name()), flags->id,
                                 TerminalSafe(artifact->format()), artifact->size_bytes(),
                                 TerminalSafe(artifact->sha256().substr(0, 16)));
  });
}

}  // namespace traind
