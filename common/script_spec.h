// What a script job (JobSpec.script: a user's program run as a job, docs/scripts.md) may ask.
// Shared by trainctl (early errors), traind (the authority, at submit) and traind-script (which
// checks each path again where it creates the file). Pure functions; thread-safe.
#ifndef TRAIND_COMMON_SCRIPT_SPEC_H_
#define TRAIND_COMMON_SCRIPT_SPEC_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

inline constexpr int kMaxScriptFiles = 20000;     // files of one working directory
inline constexpr int kMaxScriptArgs = 1024;       // words after the interpreter
inline constexpr size_t kMaxScriptArgBytes = 8192;
inline constexpr size_t kMaxScriptPathBytes = 1024;
inline constexpr char kDefaultInterpreter[] = "python3";

inline bool IsScriptJob(const trainer::v1::JobSpec& spec) { return spec.has_script(); }

// A path of the working directory: relative, '/'-separated, without empty, "." or ".." parts,
// NUL or a trailing '/', at most kMaxScriptPathBytes. INVALID_ARGUMENT naming `field`.
absl::Status ValidateScriptPath(absl::string_view field, absl::string_view path);

// An interpreter's name as a job or traind --python gives it: 1-64 of letters, digits, '.', '_',
// '-' ("python3", "py3.11").
absl::Status ValidateInterpreterName(absl::string_view field, absl::string_view name);

// A script job's spec: its program (args, files: valid, distinct paths, none both a file and a
// folder of another, digests well formed) and only the fields that mean something for a program
// (name, device, processes, gpus, devices, threads, stop_at_accuracy): a field of the built-in
// trainer (epochs, model...) is refused by name, since the program has its own. The device and
// rank rules are ValidateJobSpec's, which calls this for a script job.
absl::Status ValidateScriptJob(const trainer::v1::JobSpec& spec);

}  // namespace traind

#endif  // TRAIND_COMMON_SCRIPT_SPEC_H_
