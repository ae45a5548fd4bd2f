// Evaluation of a model on a split (accuracy and mean loss), and the check, before the first
// training step, that the model's output fits the objective — so a user's TorchScript module with
// the wrong output shape fails with both shapes named, not deep inside a loss function.
// Thread-compatible.
#ifndef TRAIND_ENGINE_EVALUATE_H_
#define TRAIND_ENGINE_EVALUATE_H_

#include <torch/torch.h>

#include <string>

#include "absl/status/status.h"
#include "data/dataset.h"
#include "engine/loss.h"
#include "engine/shard_threads.h"

namespace traind {

struct Evaluation {
  double accuracy = 0;  // fraction of correct predictions (cross-entropy jobs; 0 for mse)
  double loss = 0;      // mean loss over the split
  // Per class (cross-entropy), when asked for: each true class's samples and correct predictions
  // [K]; and confusion[true][predicted] counts [K, K] for at most kMaxConfusionClasses classes
  // (common/event_values.h: beyond, the matrix is too large to keep; undefined then).
  torch::Tensor class_samples;
  torch::Tensor class_correct;
  torch::Tensor confusion;
};

// In eval mode under autocast `amp`, in batches of at most min(batch_size, 256), or on CUDA for
// small images larger ones (evaluate.cc says how large). The model is put back in training mode
// afterwards. With `shards` (a CPU job's shard threads, whose model the
// training step already found fit for them), the split's batches are shared among the threads,
// unless a confusion matrix is wanted.
Evaluation Evaluate(torch::nn::AnyModule& model, const Split& split, const torch::Device& device,
                    const std::string& amp, int64_t batch_size, LossKind loss, int64_t num_classes,
                    bool with_confusion = false, ShardThreads* shards = nullptr);

// One forward of two samples in eval mode: INVALID_ARGUMENT naming the expected and actual shapes,
// or the forward's own error.
absl::Status CheckModelOutput(torch::nn::AnyModule& model, const Split& train,
                              const torch::Device& device, const std::string& amp, LossKind loss,
                              int64_t num_classes);

}  // namespace traind

#endif  // TRAIND_ENGINE_EVALUATE_H_
