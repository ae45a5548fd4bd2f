// Creates the optimizer a JobSpec names (adam, adamw, sgd) over the given parameters.
#ifndef TRAIND_MODELS_OPTIMIZER_FACTORY_H_
#define TRAIND_MODELS_OPTIMIZER_FACTORY_H_

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> CreateOptimizer(
    const trainer::v1::JobSpec& spec, std::vector<torch::Tensor> parameters);

}  // namespace traind

#endif  // TRAIND_MODELS_OPTIMIZER_FACTORY_H_
