#include "client/script_command.h"

#include "absl/strings/str_cat.h"
#include "client/file_transfer.h"
#include "client/working_dir.h"
#include "common/script_spec.h"

namespace traind {

void AddScriptCommandOptions(CLI::App* cmd, ScriptCommand* script, bool positional) {
  if (positional) {
    cmd->add_option("command", script->command,
                    "After --: the interpreter (one the daemon allows, traind --python), the "
                    "program and its arguments");
  }
  cmd->add_option("--workdir,-C", script->workdir,
                  "The directory sent as the program's working directory (default: this one)");
  cmd->add_option("--max-upload-mib", script->max_upload_mib,
                  "Refuse a working directory larger than this (default 1024 MiB)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
}

absl::Status SetScriptCommand(const ScriptCommand& command, trainer::v1::ScriptSpec* script) {
  if (command.command.size() < 2) {
    return absl::InvalidArgumentError(
        "give the interpreter and the program after --, e.g. -- python3 train.py --epochs 10");
  }
  const std::string& interpreter = command.command[0];
  if (absl::Status s = ValidateInterpreterName("interpreter", interpreter); !s.ok()) return s;
  if (interpreter != kDefaultInterpreter) script->set_interpreter(interpreter);
  script->clear_args();
  for (size_t i = 1; i < command.command.size(); ++i) script->add_args(command.command[i]);
  return absl::OkStatus();
}

absl::Status UploadWorkingDir(Context& ctx, const ScriptCommand& command,
                              trainer::v1::ScriptSpec* script) {
  absl::StatusOr<std::vector<WorkingFile>> files =
      ScanWorkingDir(command.workdir, command.max_upload_mib << 20);
  if (!files.ok()) return files.status();
  int sent = 0;
  int64_t sent_bytes = 0;
  for (const WorkingFile& file : *files) {
    absl::StatusOr<UploadResult> uploaded =
        UploadFile(ctx.stub(), file.absolute, "source", ctx.err());
    if (!uploaded.ok()) {
      // Not INVALID_ARGUMENT: that would read as a usage error (exit 2) of this command.
      return absl::Status(uploaded.status().code() == absl::StatusCode::kInvalidArgument
                              ? absl::StatusCode::kFailedPrecondition
                              : uploaded.status().code(),
                          absl::StrCat(file.path, ": ", uploaded.status().message()));
    }
    if (uploaded->sent) ++sent, sent_bytes += file.size;
    trainer::v1::ScriptFile* added = script->add_files();
    added->set_path(file.path);
    added->set_digest(uploaded->blob.digest());
    added->set_executable(file.executable);
  }
  if (!ctx.json()) {
    ctx.err() << "trainctl: working directory: " << files->size() << " files, sent " << sent << " ("
              << (sent_bytes + (1 << 19)) / (1 << 20) << " MiB); the daemon had the rest\n";
  }
  return absl::OkStatus();
}

}  // namespace traind
