// PreparedCache: an IDX dataset (fashion-mnist, mnist) as PrepareImages leaves it on the CPU
// (floats, normalised, at the job's image size, split into train, validation and test), kept in
// traind's cache (TRAIND_CACHE_DIR/prepared-KEY) and mapped back by the next job that reads the
// same files the same way: preparing Fashion-MNIST's 60,000 images took 0.9-1.2 s of every job's
// start; mapping them takes milliseconds (docs/benchmarks.md, "Search: a short trial's start").
// The key is made from the source files as opened beneath the job's data roots (their path, size
// and modification time, through the descriptors: the cache never stands in for a file the job
// could not open), the limits, the image size and the loss. A copy is written whole under a
// temporary name and renamed (two workers writing it at once leave one whole copy), and read as
// untrusted: one that does not read back exactly is ignored and rewritten. At most 8 copies are
// kept (the oldest go). A cache: a copy that cannot be written or read only costs the speed-up.
// Thread-compatible.
#ifndef TRAIND_DATA_PREPARED_CACHE_H_
#define TRAIND_DATA_PREPARED_CACHE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/beneath.h"
#include "data/dataset.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// The cache's key for `spec`'s dataset at image `size`, or "" for a dataset it does not keep
// (only fashion-mnist and mnist). Opens the source files beneath `roots`: their errors are
// ReadDataset's.
absl::StatusOr<std::string> PreparedKey(const trainer::v1::JobSpec& spec, int64_t size,
                                        const BeneathRoots& roots);
// The prepared dataset kept under `key`, mapped (copy on write), or nullopt.
std::optional<Dataset> MapPrepared(const std::string& cache_dir, const std::string& key);
// Keeps `data` (prepared, on the CPU) under `key`.
void KeepPrepared(const std::string& cache_dir, const std::string& key, const Dataset& data);

}  // namespace traind

#endif  // TRAIND_DATA_PREPARED_CACHE_H_
