// The files a program left in its output directory (TRAIND_OUTPUT_DIR), described as the job's
// artifacts: each regular file by its path there, size and SHA-256, what `trainctl artifacts`
// lists and `download` fetches (server/trainer_service_files.cc opens them beneath the same
// folder). Walked through descriptors without following links: a symbolic link, FIFO or device
// the program left there is named in `skipped`, never read. Thread-compatible; no LibTorch.
#ifndef TRAIND_SCRIPT_OUTPUT_ARTIFACTS_H_
#define TRAIND_SCRIPT_OUTPUT_ARTIFACTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

inline constexpr size_t kMaxSkippedShown = 20;

struct OutputArtifacts {
  std::vector<trainer::v1::Artifact> files;  // sorted by path; format "file"
  std::vector<std::string> skipped;          // "path (why)", the first kMaxSkippedShown
  int64_t skipped_total = 0;                 // all that were skipped
  int64_t not_listed = 0;                    // files past a limit (OutputLimits)
};

// What one walk may cost: a program can leave millions of files, or huge ones.
struct OutputLimits {
  size_t max_files = 100;                        // listed as artifacts
  size_t max_entries = 10000;                    // looked at, folders and skipped ones included
  int64_t max_hashed_bytes = int64_t{32} << 30;  // read to compute digests, in all
};

// Every regular file under `outputs_dir` within `limits` (the rest counted in not_listed),
// folders at most 32 deep, names valid UTF-8 of at most kMaxArtifactNameBytes
// (common/artifact_names.h). An error only when `outputs_dir` itself cannot be opened.
absl::StatusOr<OutputArtifacts> CollectOutputArtifacts(const std::string& outputs_dir,
                                                       const OutputLimits& limits);

}  // namespace traind

#endif  // TRAIND_SCRIPT_OUTPUT_ARTIFACTS_H_
