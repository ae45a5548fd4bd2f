// The files traind keeps for each job: <jobs-dir>/ID/ (checkpoint, artifacts, trace), created by
// the scheduler when the job first runs. How much disk a job holds, and its removal when the job
// is deleted — of that directory only: symlinks inside are removed, never followed. Thread-safe
// (stateless); blocks on disk, so never call from a reaction.
#ifndef TRAIND_SERVER_JOB_FILES_H_
#define TRAIND_SERVER_JOB_FILES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace traind {

// Bytes of the regular files under <jobs_dir>/<id>/ (0 when it does not exist).
int64_t JobDiskBytes(const std::string& jobs_dir, int64_t id);

// Removes <jobs_dir>/<id>/ and everything in it; OK when it does not exist. FAILED_PRECONDITION
// when that path is not a directory (traind made none there).
absl::Status RemoveJobFiles(const std::string& jobs_dir, int64_t id);

}  // namespace traind

#endif  // TRAIND_SERVER_JOB_FILES_H_
