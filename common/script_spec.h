// What a script job (JobSpec.script: a user's program run as a job, docs/scripts.md) may ask.
// Shared by trainctl (early errors), traind (the authority, at submit) and traind-script (which
// checks each path again where it creates the file). Pure functions; thread-safe.
#ifndef TRAIND_COMMON_SCRIPT_SPEC_H_
#define TRAIND_COMMON_SCRIPT_SPEC_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

inline constexpr int kMaxScriptFiles = 20000;  // files of one working directory
inline constexpr int kMaxScriptArgs = 1024;    // words after the interpreter
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

// Whether a script job may set JobSpec field `field` (device, processes, gpus, devices, threads,
// name, stop_at_accuracy, script).
bool IsScriptJobField(absl::string_view field);

// A placeholder's name (ScriptSpec.params, `--param NAME=...`): a letter or '_', then up to 63
// letters, digits and '_'.
absl::Status ValidateParamName(absl::string_view field, absl::string_view name);

// The program's arguments with each {NAME} of `script.params` and {device} (`device_kind`: cpu,
// cuda, mps) put in; other braces are left as they are (code passed with -c may have some).
std::vector<std::string> ExpandScriptArgs(const trainer::v1::ScriptSpec& script,
                                          absl::string_view device_kind);

// A script job's spec: its program (args, files: valid, distinct paths, none both a file and a
// folder of another, digests well formed, every param named in args) and only the fields that mean
// something for a program (name, device, processes, gpus, devices, threads, stop_at_accuracy): a
// field of the built-in trainer (epochs, model...) is refused by name, since the program has its
// own. The device and rank rules are ValidateJobSpec's, which calls this for a script job.
absl::Status ValidateScriptJob(const trainer::v1::JobSpec& spec);

}  // namespace traind

#endif  // TRAIND_COMMON_SCRIPT_SPEC_H_
