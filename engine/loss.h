// The training objective a job names (JobSpec.loss): cross-entropy over [N, classes] logits with
// class-index targets, or mean squared error between predictions and float targets of the same
// shape. One place, shared by the eager step, the CUDA-graph step and evaluation.
#ifndef TRAIND_ENGINE_LOSS_H_
#define TRAIND_ENGINE_LOSS_H_

#include <torch/torch.h>

#include <string>

#include "absl/status/status.h"

namespace traind {

enum class LossKind { kCrossEntropy, kMse };

// "mse" -> kMse; anything else (the default "cross_entropy") -> kCrossEntropy.
LossKind LossKindFromName(const std::string& name);

// `label_smoothing` (cross-entropy only; training passes the spec's, evaluation 0): the weight
// spread over the other classes.
torch::Tensor ComputeLoss(LossKind kind, const torch::Tensor& output, const torch::Tensor& target,
                          double label_smoothing = 0);

// Whether `output` of a batch of `batch` inputs fits the objective: [batch, classes] for
// cross-entropy, the targets' shape for mse. INVALID_ARGUMENT with the expected and actual shapes.
absl::Status CheckOutputShape(LossKind kind, const torch::Tensor& output, int64_t batch,
                              int64_t classes, const torch::Tensor& target_example);

}  // namespace traind

#endif  // TRAIND_ENGINE_LOSS_H_
