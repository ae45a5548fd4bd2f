// A job's trained weights as files people take away: <job_dir>/NAME.pt for NAME final (after the
// last epoch) and best (the epoch with the best validation result). Built-in networks: a state
// dict (a pickled {name: tensor} in torch.save's zip format, on the CPU, with nothing but strings
// and tensors in it, so that torch.load reads it with weights_only=True, the default since
// PyTorch 2.6), with the
// parameter and buffer names of bench/reference/'s definitions, so load_state_dict just works.
// TorchScript jobs: the trained module itself (torch.jit.load). Written durably; described by an
// Artifact (size, SHA-256) the job emits as an event. Thread-compatible.
#ifndef TRAIND_ENGINE_ARTIFACTS_H_
#define TRAIND_ENGINE_ARTIFACTS_H_

#include <torch/torch.h>

#include <string>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// Writes `model`'s current weights as <job_dir>/<name>.pt.
absl::StatusOr<trainer::v1::Artifact> SaveArtifact(torch::nn::AnyModule& model,
                                                   const std::string& job_dir,
                                                   const std::string& name);

// Whether `model`'s artifact is a state dict (a built-in network), not a TorchScript module.
bool HasStateDict(torch::nn::AnyModule& model);

// A state dict's file, written whole and synced beside its place but not yet in it
// (common/durable_file.h StageFileDurably), and what its event will say.
struct StagedArtifact {
  std::string temp;                // the written file
  std::string path;                // its place: <job_dir>/<name>.pt
  trainer::v1::Artifact artifact;  // name, format, size and SHA-256 of those bytes
};

// Pickles `state` (from StateDict) and stages it for <job_dir>/<name>.pt. Touches no model and no
// file a job's reader sees: any thread.
absl::StatusOr<StagedArtifact> StageStateDict(const c10::Dict<std::string, torch::Tensor>& state,
                                              const std::string& job_dir, const std::string& name);

// Gives a staged file its place (a rename and a sync of the directory), so that the file and the
// event that describes it change together on the caller's thread. Returns the description.
absl::StatusOr<trainer::v1::Artifact> CommitArtifact(const StagedArtifact& staged);

// Copies weights from `path` into `model` (fine-tuning, evaluation): a state dict (torch.save of
// {name: tensor}, as SaveArtifact writes or PyTorch's model.state_dict()) or a TorchScript module.
// Strict, like PyTorch's load_state_dict: every parameter and buffer of the model must be in the
// file with its shape, and the file may hold nothing else; INVALID_ARGUMENT names the first
// difference. Returns how many tensors were copied.
absl::StatusOr<int> LoadWeights(torch::nn::AnyModule& model, const std::string& path);

// The weights of a built-in model as a state dict (what SaveArtifact writes for one): copies on
// the CPU, also of a CPU model's tensors, so that training on does not change them.
c10::Dict<std::string, torch::Tensor> StateDict(const torch::nn::Module& module);

}  // namespace traind

#endif  // TRAIND_ENGINE_ARTIFACTS_H_
