#include "models/model_factory.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/job_spec.h"
#include "models/lenet5.h"
#include "models/mlp.h"
#include "models/resnet18.h"
#include "models/vgg16.h"

namespace traind {

int64_t ImageSizeFor(const trainer::v1::JobSpec& spec) {
  if (spec.has_image_size()) return spec.image_size();
  if (spec.model() == "lenet5") return 32;
  return 0;
}

absl::StatusOr<torch::nn::AnyModule> CreateModel(const trainer::v1::JobSpec& spec,
                                                 const ModelInput& input) {
  const std::string& name = spec.model();
  if (name == "lenet5") {
    if (input.height != 32 || input.width != 32) {
      return absl::InvalidArgumentError(
          absl::StrCat("image_size: lenet5 needs 32x32 images, got ", input.height, "x", input.width));
    }
    return torch::nn::AnyModule(LeNet5(input.channels, input.num_classes));
  }
  if (name == "mlp") {
    return torch::nn::AnyModule(
        Mlp(input.channels * input.height * input.width, input.num_classes));
  }
  if (name == "vgg16" || name == "resnet18") {
    if (input.height < 32 || input.width < 32) {
      return absl::InvalidArgumentError(absl::StrCat("image_size: ", name,
                                                     " needs images of at least 32x32, got ",
                                                     input.height, "x", input.width));
    }
    if (name == "vgg16") return torch::nn::AnyModule(Vgg16(input.channels, input.num_classes));
    return torch::nn::AnyModule(ResNet18(input.channels, input.num_classes, spec.cifar_stem()));
  }
  return absl::InvalidArgumentError(absl::StrCat("model: unknown value '", name,
                                                 "'; allowed: ", absl::StrJoin(KnownModels(), ", ")));
}

bool UsesChannelsLast(const trainer::v1::JobSpec& spec, const torch::Device& device) {
  return device.is_cuda() && (spec.model() == "vgg16" || spec.model() == "resnet18");
}

void PlaceModel(torch::nn::AnyModule& model, const trainer::v1::JobSpec& spec,
                const torch::Device& device) {
  model.ptr()->to(device);
  if (!UsesChannelsLast(spec, device)) return;
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : model.ptr()->parameters()) {
    if (p.dim() == 4) p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
  }
}

}  // namespace traind
