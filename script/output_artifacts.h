// The files a program left in its output directory (TRAIND_OUTPUT_DIR), described as the job's
// artifacts: each regular file by its path there, size and SHA-256, what `trainctl artifacts`
// lists and `download` fetches (server/trainer_service_files.cc opens them beneath the same
// folder). Walked through descriptors without following links: a symbolic link, FIFO or device
// the program left there is named in `skipped`, never read. Thread-compatible; no LibTorch.
#ifndef TRAIND_SCRIPT_OUTPUT_ARTIFACTS_H_
#define TRAIND_SCRIPT_OUTPUT_ARTIFACTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct OutputArtifacts {
  std::vector<trainer::v1::Artifact> files;  // sorted by path; format "file"
  std::vector<std::string> skipped;          // "path (why)"
  int64_t not_listed = 0;                    // files past max_files
};

// Every regular file under `outputs_dir`, at most `max_files` (the rest counted in not_listed),
// folders at most 32 deep. An error only when `outputs_dir` itself cannot be opened.
absl::StatusOr<OutputArtifacts> CollectOutputArtifacts(const std::string& outputs_dir,
                                                       size_t max_files);

}  // namespace traind

#endif  // TRAIND_SCRIPT_OUTPUT_ARTIFACTS_H_
