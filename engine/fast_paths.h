// Which fast paths a training job takes on its device: the dataset resident on the device
// (gathered there, no copy per batch) and the whole step captured in a CUDA graph (one launch
// instead of hundreds). Both are on by default where they apply; a spec that sets either field
// decides for itself (true where it cannot apply is refused at submit, common/job_spec.cc).
// A pure function of the spec and a few facts about the job, so every rule is unit-tested.
#ifndef TRAIND_ENGINE_FAST_PATHS_H_
#define TRAIND_ENGINE_FAST_PATHS_H_

#include <cstdint>
#include <string>

#include "trainer/v1/trainer.pb.h"

namespace traind {

struct FastPathFacts {
  bool cuda = false;              // the job's device is a CUDA device
  bool data_parallel = false;     // one rank of several
  int64_t dataset_bytes = 0;      // every split's inputs and targets
  int64_t free_device_bytes = 0;  // what the device has free now; 0: unknown
  bool graphs_built = false;      // this build's LibTorch can capture CUDA graphs
};

struct FastPaths {
  bool device_resident = false;
  bool cuda_graph = false;
  // One log line: what is on, and why each default that is off is off. Empty on the CPU, where
  // neither applies.
  std::string explanation;
};

// At most this share of the device's free memory holds a resident dataset by default: the model,
// its activations and the allocator's slack need the rest.
inline constexpr int64_t kResidentShareDivisor = 4;

FastPaths ChooseFastPaths(const trainer::v1::JobSpec& spec, const FastPathFacts& facts);

}  // namespace traind

#endif  // TRAIND_ENGINE_FAST_PATHS_H_
