#include "models/optimizer_factory.h"

#include "absl/strings/str_cat.h"

namespace traind {

absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> CreateOptimizer(
    const trainer::v1::JobSpec& spec, std::vector<torch::Tensor> parameters) {
  namespace optim = torch::optim;
  const double lr = spec.learning_rate();
  if (spec.optimizer() == "adam") {
    return std::make_unique<optim::Adam>(
        std::move(parameters), optim::AdamOptions(lr).weight_decay(spec.weight_decay()));
  }
  if (spec.optimizer() == "adamw") {
    return std::make_unique<optim::AdamW>(
        std::move(parameters),
        optim::AdamWOptions(lr).weight_decay(spec.has_weight_decay() ? spec.weight_decay() : 1e-2));
  }
  if (spec.optimizer() == "sgd") {
    return std::make_unique<optim::SGD>(std::move(parameters),
                                        optim::SGDOptions(lr)
                                            .momentum(spec.momentum())
                                            .nesterov(spec.nesterov())
                                            .weight_decay(spec.weight_decay()));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer: unknown value '", spec.optimizer(), "'; allowed: adam, adamw, sgd"));
}

}  // namespace traind
