// Creates a model by its name in the catalog (common/catalog.h): a built-in network, or the
// TorchScript module of a `torchscript` job. Thread-compatible.
#ifndef TRAIND_MODELS_MODEL_FACTORY_H_
#define TRAIND_MODELS_MODEL_FACTORY_H_

#include <torch/torch.h>

#include <string>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// What the data gives the model. Inputs that are not images (tables) have channels, height and
// width 0; only a TorchScript model takes those.
struct ModelInput {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t num_classes = 10;
};

// The square size images are resized to: spec.image_size when set, else the model's catalog
// size (lenet5: 32), else 0 (keep the data's size).
int64_t ImageSizeFor(const trainer::v1::JobSpec& spec);

// INVALID_ARGUMENT for an unknown name (listing the known ones) or an input the model cannot take.
// `model_path`: the TorchScript file of a `torchscript` job (WorkerRequest.model_path).
absl::StatusOr<torch::nn::AnyModule> CreateModel(const trainer::v1::JobSpec& spec,
                                                 const ModelInput& input,
                                                 const std::string& model_path = "");

// The parameters training updates: those that require a gradient. A frozen one (VGG16's
// convolution biases, a TorchScript model's frozen layers) gets none, so the data-parallel reducer,
// the CUDA graph's optimizer lists and the shards' gradient lists leave it out; optimizers and
// checkpoints still take every parameter.
std::vector<torch::Tensor> TrainableParameters(const torch::nn::Module& model);

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
