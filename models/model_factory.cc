#include "models/model_factory.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/catalog.h"
#include "common/status_macros.h"
#include "models/lenet5.h"
#include "models/mlp.h"
#include "models/resnet18.h"
#include "models/scripted_model.h"
#include "models/vgg16.h"

namespace traind {

int64_t ImageSizeFor(const trainer::v1::JobSpec& spec) {
  if (spec.has_image_size()) return spec.image_size();
  const ModelInfo* model = FindModel(spec.model());
  return model == nullptr ? 0 : model->image_size;
}

absl::StatusOr<torch::nn::AnyModule> CreateModel(const trainer::v1::JobSpec& spec,
                                                 const ModelInput& input,
                                                 const std::string& model_path) {
  const std::string& name = spec.model();
  const ModelInfo* info = FindModel(name);
  if (info == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model: unknown value '", name, "'; allowed: ", absl::StrJoin(ModelNames(), ", ")));
  }
  if (info->needs_model_file) {
    ASSIGN_OR_RETURN(ScriptedModel model, LoadScriptedModel(model_path));
    return torch::nn::AnyModule(model);
  }
  if (input.channels <= 0 || input.height <= 0 || input.width <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model: ", name, " takes images [N, C, H, W]; this dataset's inputs are not images"));
  }
  if (info->image_size > 0 &&
      (input.height != info->image_size || input.width != info->image_size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("image_size: ", name, " needs ", info->image_size, "x", info->image_size,
                     " images, got ", input.height, "x", input.width));
  }
  if (input.height < info->min_image_size || input.width < info->min_image_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("image_size: ", name, " needs images of at least ", info->min_image_size, "x",
                     info->min_image_size, ", got ", input.height, "x", input.width));
  }
  if (name == "lenet5") return torch::nn::AnyModule(LeNet5(input.channels, input.num_classes));
  if (name == "mlp") {
    return torch::nn::AnyModule(
        Mlp(input.channels * input.height * input.width, input.num_classes));
  }
  if (name == "vgg16") return torch::nn::AnyModule(Vgg16(input.channels, input.num_classes));
  if (name == "resnet18") {
    return torch::nn::AnyModule(ResNet18(input.channels, input.num_classes, spec.cifar_stem()));
  }
  return absl::UnimplementedError(
      absl::StrCat("model: '", name, "' is in the catalog but not built"));
}

bool UsesChannelsLast(const trainer::v1::JobSpec& spec, const torch::Device& device) {
  const ModelInfo* model = FindModel(spec.model());
  return device.is_cuda() && model != nullptr && model->channels_last_on_cuda;
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

std::vector<torch::Tensor> TrainableParameters(const torch::nn::Module& model) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& p : model.parameters()) {
    if (p.requires_grad()) out.push_back(p);
  }
  return out;
}

}  // namespace traind
