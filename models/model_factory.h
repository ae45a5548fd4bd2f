// Creates a model by its registered name. Thread-compatible.
#ifndef TRAIND_MODELS_MODEL_FACTORY_H_
#define TRAIND_MODELS_MODEL_FACTORY_H_

#include <torch/torch.h>

#include <string>

#include "absl/status/statusor.h"

namespace traind {

struct ModelInput {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t num_classes = 10;
};

// The image size a model expects (LeNet5 wants 32x32; the data is resized to it).
ModelInput InputFor(const std::string& model, ModelInput data);

// INVALID_ARGUMENT for an unknown name, listing the known ones.
absl::StatusOr<torch::nn::AnyModule> CreateModel(const std::string& name, const ModelInput& input);

}  // namespace traind

#endif  // TRAIND_MODELS_MODEL_FACTORY_H_
