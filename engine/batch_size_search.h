// --batch-size auto: start at 32 and double while a training step (forward, backward, optimizer
// step, with the job's amp and accumulation) fits in the memory budget, keeping the largest that
// fit. The budget keeps a margin: 80% of the device memory available when the search starts.
#ifndef TRAIND_ENGINE_BATCH_SIZE_SEARCH_H_
#define TRAIND_ENGINE_BATCH_SIZE_SEARCH_H_

#include <torch/torch.h>

#include <atomic>
#include <string>

#include "absl/status/statusor.h"
#include "models/model_factory.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct BatchSizeChoice {
  int64_t batch_size = 0;
  std::string
      explanation;  // e.g. "batch-size auto: 512 (peak 1.2 GiB of a 3.1 GiB budget; 1024 ...)"
};

// Each probe is a throwaway model (`model_path`: a torchscript job's file) trained two steps on
// random inputs and targets shaped like `example` (one training sample).
struct ProbeExample {
  torch::Tensor input;  // one sample's input, e.g. [C, H, W]
  torch::Tensor label;  // one target: a class index (int64 scalar) or an mse target
};
absl::StatusOr<BatchSizeChoice> ChooseBatchSize(const trainer::v1::JobSpec& spec,
                                                const ModelInput& input,
                                                const ProbeExample& example,
                                                const std::string& model_path,
                                                const torch::Device& device, int64_t train_size,
                                                const std::atomic<bool>& stop);

}  // namespace traind

#endif  // TRAIND_ENGINE_BATCH_SIZE_SEARCH_H_
