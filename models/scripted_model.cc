#include "models/scripted_model.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace traind {

namespace {

// nn::Module names may not contain '.', which a script's nested names ("features.0.weight") do.
std::string FlatName(const std::string& name) { return absl::StrReplaceAll(name, {{".", "__"}}); }

std::string WithThousands(int64_t n) {
  std::string digits = std::to_string(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

}  // namespace

ScriptedModelImpl::ScriptedModelImpl(torch::jit::Module module) : module_(std::move(module)) {
  for (const auto& parameter : module_.named_parameters(/*recurse=*/true)) {
    register_parameter(FlatName(parameter.name), parameter.value, parameter.value.requires_grad());
  }
  for (const auto& buffer : module_.named_buffers(/*recurse=*/true)) {
    register_buffer(FlatName(buffer.name), buffer.value);
  }
  module_.train(true);
}

torch::Tensor ScriptedModelImpl::forward(torch::Tensor x) {
  c10::IValue out = module_.forward({std::move(x)});
  if (!out.isTensor()) {
    throw ModelContractError(absl::StrCat("model_file: forward returned a ", out.tagKind(),
                                          "; traind needs one tensor ([N, classes] logits, or "
                                          "predictions shaped like the target for mse)"));
  }
  return out.toTensor();
}

void ScriptedModelImpl::train(bool on) {
  torch::nn::Module::train(on);
  module_.train(on);
}

std::vector<std::pair<std::string, torch::Tensor>> ScriptedModelImpl::NamedTensors() const {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& p : module_.named_parameters(/*recurse=*/true))
    tensors.emplace_back(p.name, p.value);
  for (const auto& b : module_.named_buffers(/*recurse=*/true))
    tensors.emplace_back(b.name, b.value);
  return tensors;
}

void ScriptedModelImpl::SaveScriptOnCpu(const std::string& path) const {
  torch::jit::Module copy = module_.deepcopy();
  copy.to(torch::kCPU);
  copy.save(path);
}

std::string ScriptedModelImpl::Describe() const {
  int64_t count = 0;
  int64_t tensors = 0;
  for (const torch::Tensor& p : parameters()) {
    count += p.numel();
    ++tensors;
  }
  return absl::StrCat(module_.type()->name() ? module_.type()->name()->name() : "module", ": ",
                      WithThousands(count), " parameters in ", tensors, " tensors");
}

absl::StatusOr<ScriptedModel> LoadScriptedModel(const std::string& path) {
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, torch::kCPU);
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    if (const size_t newline = what.find('\n'); newline != std::string::npos) what.resize(newline);
    return absl::InvalidArgumentError(
        absl::StrCat("model_file: not a TorchScript file (save it with "
                     "torch.jit.save(torch.jit.script(model), path)): ",
                     what));
  }
  if (!module.find_method("forward").has_value()) {
    return absl::InvalidArgumentError("model_file: the TorchScript module has no forward method");
  }
  ScriptedModel model(std::move(module));
  bool trainable = false;
  for (const torch::Tensor& p : model->parameters()) trainable = trainable || p.requires_grad();
  if (!trainable) {
    return absl::InvalidArgumentError(
        "model_file: the TorchScript module has no trainable parameters");
  }
  return model;
}

absl::StatusOr<std::string> InspectModelFile(const std::string& path) {
  try {
    absl::StatusOr<ScriptedModel> model = LoadScriptedModel(path);
    if (!model.ok()) return model.status();
    return absl::StrCat("TorchScript ", (*model)->Describe());
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("model_file: ", e.what()));
  }
}

}  // namespace traind
