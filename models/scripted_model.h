// A TorchScript module (saved in Python by torch.jit.save) as a torch::nn::Module, so the training
// engine trains it like a built-in network: its parameters and buffers are registered here as the
// very same tensors the script module holds, so optimizers, to(device), checkpoints and the
// job's artifacts all act on the module itself. Thread-compatible.
#ifndef TRAIND_MODELS_SCRIPTED_MODEL_H_
#define TRAIND_MODELS_SCRIPTED_MODEL_H_

#include <torch/script.h>
#include <torch/torch.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace traind {

// Thrown by forward when the module breaks traind's contract (it returned no tensor). The training
// job's exception wall turns it into INVALID_ARGUMENT: the user's model is at fault, not traind.
class ModelContractError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ScriptedModelImpl : public torch::nn::Module {
 public:
  explicit ScriptedModelImpl(torch::jit::Module module);

  // forward(x) of the script; its result must be a tensor.
  torch::Tensor forward(torch::Tensor x);
  void train(bool on = true) override;

  // A copy of the module with its current (trained) weights, on the CPU so that torch.jit.load
  // reads it on any machine.
  void SaveScriptOnCpu(const std::string& path) const;
  // The script's parameters and buffers by their own (dotted) names, as torch.jit.load sees them.
  std::vector<std::pair<std::string, torch::Tensor>> NamedTensors() const;
  // "MyNet: 61,706 parameters in 10 tensors"
  std::string Describe() const;

 private:
  torch::jit::Module module_;
};
TORCH_MODULE(ScriptedModel);

// Loads `path` on the CPU. INVALID_ARGUMENT naming the problem for a file that is not TorchScript
// (or truncated), a module without forward, or one without trainable parameters.
absl::StatusOr<ScriptedModel> LoadScriptedModel(const std::string& path);

// LoadScriptedModel's verdict as text: the description, or the error. Never throws.
absl::StatusOr<std::string> InspectModelFile(const std::string& path);

}  // namespace traind

#endif  // TRAIND_MODELS_SCRIPTED_MODEL_H_
