// trainctl upload FILE... [--kind model|data]: store files on the daemon ahead of jobs (by content:
// what it holds already is not sent again); prints each digest, which job specs and files can name
// (model_file / data_file: "sha256:...").
#include "absl/strings/str_format.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/file_transfer.h"
#include "common/grpc_status.h"
#include "common/terminal_text.h"

namespace traind {

namespace {

struct UploadFlags {
  std::vector<std::string> files;
  std::string kind = "data";
};

}  // namespace

void AddUploadCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<UploadFlags>();
  CLI::App* cmd = app.add_subcommand(
      "upload", "Store files on the daemon (by SHA-256, once); prints their digests");
  cmd->footer(
      "Examples:\n"
      "  trainctl upload --kind model net.pt       # checked: it must load as TorchScript\n"
      "  trainctl upload data.pt                   # then: --data-file sha256:...\n"
      "submit --model-file and --data-file --upload do this by themselves.");
  cmd->add_option("files", flags->files, "Files to send")->required();
  cmd->add_option("--kind", flags->kind,
                  "model (a TorchScript file) | data | weights (for --init-from sha256:...)")
      ->check(CLI::IsMember({"model", "data", "weights"}))
      ->capture_default_str();
  cmd->callback([&ctx, exit_code, flags] {
    int worst = kExitOk;
    for (const std::string& file : flags->files) {
      absl::StatusOr<UploadResult> result = UploadFile(ctx.stub(), file, flags->kind, ctx.err());
      if (!result.ok()) {
        worst = std::max(worst, absl::IsNotFound(result.status())
                                    ? ctx.UsageError(std::string(result.status().message()))
                                    : ctx.Fail(ToGrpcStatus(result.status())));
        continue;
      }
      if (ctx.json()) {
        ctx.PrintJson(result->blob, /*one_line=*/true);
        continue;
      }
      ctx.out() << TerminalSafe(result->blob.digest()) << "  " << file << "\n";
      ctx.err() << absl::StrFormat(
          "%s: %s (%.1f MB)%s\n", file, result->sent ? "uploaded" : "already on the daemon",
          result->blob.size_bytes() / 1e6,
          result->blob.description().empty() ? ""
                                             : ", " + TerminalSafe(result->blob.description()));
    }
    *exit_code = worst;
  });
}

}  // namespace traind
