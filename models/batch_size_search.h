// --batch-size auto: start at 32 and double while a training step (forward, backward, optimizer
// step, with the job's amp and accumulation) fits in the memory budget, keeping the largest that
// fit. The budget keeps a margin: 80% of the device memory available when the search starts.
#ifndef TRAIND_MODELS_BATCH_SIZE_SEARCH_H_
#define TRAIND_MODELS_BATCH_SIZE_SEARCH_H_

#include <torch/torch.h>

#include <atomic>
#include <string>

#include "absl/status/statusor.h"
#include "models/model_factory.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct BatchSizeChoice {
  int64_t batch_size = 0;
  std::string explanation;  // e.g. "batch-size auto: 512 (peak 1.2 GiB of a 3.1 GiB budget; 1024 ...)"
};

absl::StatusOr<BatchSizeChoice> ChooseBatchSize(const trainer::v1::JobSpec& spec,
                                                const ModelInput& input,
                                                const torch::Device& device, int64_t train_size,
                                                const std::atomic<bool>& stop);

}  // namespace traind

#endif  // TRAIND_MODELS_BATCH_SIZE_SEARCH_H_
