// What a job's artifacts are called, in one place for the daemon, trainctl and the dashboard.
// A built-in job keeps weights named `best` and `final` (NAME.pt in its directory); a script job
// (JobSpec.script) keeps the files its program wrote to TRAIND_OUTPUT_DIR, each named by its path
// there ("model.pt", "plots/loss.png"). No LibTorch.
#ifndef TRAIND_COMMON_ARTIFACT_NAMES_H_
#define TRAIND_COMMON_ARTIFACT_NAMES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace traind {

// The folder of a script job's directory whose files become its artifacts.
inline constexpr char kScriptOutputsFolder[] = "outputs";
// The folder of a script job's directory that is its TRAIND_CHECKPOINT_DIR.
inline constexpr char kScriptCheckpointsFolder[] = "checkpoints";
// What the traind package (python/traind/__init__.py) leaves in TRAIND_CHECKPOINT_DIR when a
// search's trial paused at its rung after saving its checkpoint: the epoch, as text.
inline constexpr char kScriptPausedMark[] = ".traind-paused";
// The longest name (path in that folder) a program's file may have to be an artifact: what a
// download request's name may hold (common/message_bounds.cc's default for a string).
inline constexpr size_t kMaxArtifactNameBytes = 256;

// Whether `name` may be asked for: for a built-in job letters, digits, '-' and '_' (a file name
// in the job's directory with nothing that could climb out of it); for a script job a relative
// path with no empty, '.' or '..' part (ValidateScriptPath), at most kMaxArtifactNameBytes.
// INVALID_ARGUMENT naming "name".
absl::Status ValidateArtifactName(bool script_job, absl::string_view name);

// Where a download lands when the user names no file: "job7-best.pt" for weights (best, final),
// "job12-model.pt" for a program's "checkpoints/model.pt" (the last part of the path, as it is),
// with any byte outside letters, digits and "._-" made '_' (it is also an HTTP header's file
// name). python/traind/client.py's default_download_name is the same rule.
std::string DefaultDownloadName(int64_t job_id, absl::string_view name);

}  // namespace traind

#endif  // TRAIND_COMMON_ARTIFACT_NAMES_H_
