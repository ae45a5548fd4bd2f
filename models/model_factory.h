// Creates a model by its registered name. Thread-compatible.
#ifndef TRAIND_MODELS_MODEL_FACTORY_H_
#define TRAIND_MODELS_MODEL_FACTORY_H_

#include <torch/torch.h>

#include <string>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct ModelInput {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t num_classes = 10;
};

// The square size images are resized to: spec.image_size when set, 32 for lenet5 (which needs
// 32x32), else 0 (keep the data's size).
int64_t ImageSizeFor(const trainer::v1::JobSpec& spec);

// INVALID_ARGUMENT for an unknown name (listing the known ones) or an input the model cannot take.
absl::StatusOr<torch::nn::AnyModule> CreateModel(const trainer::v1::JobSpec& spec,
                                                 const ModelInput& input);

// Whether the model's 4-d weights are kept channels_last (NHWC) on `device`: the deep conv nets
// (vgg16, resnet18) on CUDA, where cuDNN's tensor-core convolutions work in NHWC; convolutions
// then take NCHW inputs and produce NHWC activations.
bool UsesChannelsLast(const trainer::v1::JobSpec& spec, const torch::Device& device);

// Moves the model to `device` and into the memory format UsesChannelsLast chooses. Call before
// creating the optimizer.
void PlaceModel(torch::nn::AnyModule& model, const trainer::v1::JobSpec& spec,
                const torch::Device& device);

}  // namespace traind

#endif  // TRAIND_MODELS_MODEL_FACTORY_H_
