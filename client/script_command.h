// What `trainctl run` and `trainctl sweep -- ...` share: a program's command line after `--`
// (interpreter, program, arguments) and its working directory, sent to the daemon file by file
// (only what it lacks) and written into a ScriptSpec.
#ifndef TRAIND_CLIENT_SCRIPT_COMMAND_H_
#define TRAIND_CLIENT_SCRIPT_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "client/context.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct ScriptCommand {
  std::vector<std::string> command;  // after "--": the interpreter, the program, its arguments
  std::string workdir = ".";
  int64_t max_upload_mib = 1024;
};

// Adds `-C/--workdir`, `--max-upload-mib` and (with `positional`) the command to `cmd`.
void AddScriptCommandOptions(CLI::App* cmd, ScriptCommand* script, bool positional = true);

// The interpreter and arguments into `script`; INVALID_ARGUMENT (a usage error) when the command
// is missing or the interpreter's name is not one.
absl::Status SetScriptCommand(const ScriptCommand& command, trainer::v1::ScriptSpec* script);

// Uploads the working directory (what the daemon lacks) and lists it in `script`, telling on
// stderr how much was sent. INVALID_ARGUMENT or NOT_FOUND for a directory refused as it is
// (ignore rules, symlinks, limits: a usage error); the daemon's refusal otherwise.
absl::Status UploadWorkingDir(Context& ctx, const ScriptCommand& command,
                              trainer::v1::ScriptSpec* script);

}  // namespace traind

#endif  // TRAIND_CLIENT_SCRIPT_COMMAND_H_
