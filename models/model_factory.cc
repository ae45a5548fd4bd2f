#include "models/model_factory.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/job_spec.h"
#include "models/lenet5.h"
#include "models/mlp.h"

namespace traind {

ModelInput InputFor(const std::string& model, ModelInput data) {
  if (model == "lenet5") {
    data.height = 32;
    data.width = 32;
  }
  return data;
}

absl::StatusOr<torch::nn::AnyModule> CreateModel(const std::string& name, const ModelInput& input) {
  if (name == "lenet5") return torch::nn::AnyModule(LeNet5(input.channels, input.num_classes));
  if (name == "mlp") {
    return torch::nn::AnyModule(
        Mlp(input.channels * input.height * input.width, input.num_classes));
  }
  return absl::InvalidArgumentError(absl::StrCat("model: unknown value '", name,
                                                 "'; allowed: ", absl::StrJoin(KnownModels(), ", ")));
}

}  // namespace traind
