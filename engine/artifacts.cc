#include "engine/artifacts.h"

#include <caffe2/serialize/inline_container.h>
#include <sys/stat.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "data/saved_dict.h"
#include "models/scripted_model.h"

namespace traind {

c10::Dict<std::string, torch::Tensor> StateDict(const torch::nn::Module& module) {
  c10::Dict<std::string, torch::Tensor> state;
  // The CPU and the standard layout: readable on any machine, channels_last weights included.
  const auto on_cpu = [](const torch::Tensor& t) {
    return t.detach()
        .to(torch::TensorOptions().device(torch::kCPU), /*non_blocking=*/false, /*copy=*/true)
        .contiguous();
  };
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    state.insert(p.key(), on_cpu(p.value()));
  }
  for (const auto& b : module.named_buffers(/*recurse=*/true)) {
    state.insert(b.key(), on_cpu(b.value()));
  }
  return state;
}

namespace {

// torch::pickle_save's archive, but with plain (untagged) dicts: pickle_save tags a typed dict
// with torch.jit._pickle.restore_type_tag, a global that PyTorch >= 2.6's torch.load refuses by
// default (weights_only=True). Untagged, the file holds only a dict, strings and tensors, which
// torch.load(path) reads with its defaults.
std::vector<char> StateDictBytes(const c10::Dict<std::string, torch::Tensor>& state) {
  std::vector<char> pickled;
  torch::jit::Pickler pickler(
      [&pickled](const char* bytes, size_t size) {
        pickled.insert(pickled.end(), bytes, bytes + size);
      },
      /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
      /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(state);
  pickler.stop();
  std::vector<char> archive;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&archive](const void* data, size_t size) {
      const char* bytes = static_cast<const char*>(data);
      archive.insert(archive.end(), bytes, bytes + size);
      return size;
    });
    torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(),
                                       writer);
    writer.writeEndOfFile();
  }
  return archive;
}

std::string ShapeText(const torch::Tensor& t) {
  std::string text = "[";
  for (int64_t i = 0; i < t.dim(); ++i) absl::StrAppend(&text, i ? ", " : "", t.size(i));
  return text + "]";
}

// name -> tensor from a TorchScript module, or else a pickled dict of tensors.
absl::StatusOr<std::map<std::string, torch::Tensor>> ReadWeights(const std::string& path) {
  std::map<std::string, torch::Tensor> weights;
  try {
    torch::jit::Module module = torch::jit::load(path, torch::kCPU);
    for (const auto& p : module.named_parameters(true)) weights[p.name] = p.value;
    for (const auto& b : module.named_buffers(true)) weights[b.name] = b.value;
    return weights;
  } catch (const c10::Error&) {
    // not TorchScript: a state dict, below
  }
  absl::StatusOr<c10::Dict<c10::IValue, c10::IValue>> saved =
      ReadSavedDict(path, "init_from", "a TorchScript module or a state dict {name: tensor}");
  if (!saved.ok()) return saved.status();
  for (const auto& entry : *saved) {
    if (!entry.key().isString() || !entry.value().isTensor()) {
      return absl::InvalidArgumentError(
          "init_from: the state dict must map names (strings) to tensors");
    }
    weights[entry.key().toStringRef()] = entry.value().toTensor();
  }
  return weights;
}

}  // namespace

absl::StatusOr<int> LoadWeights(torch::nn::AnyModule& model, const std::string& path) {
  absl::StatusOr<std::map<std::string, torch::Tensor>> source = ReadWeights(path);
  if (!source.ok()) return source.status();
  std::vector<std::pair<std::string, torch::Tensor>> targets;
  if (const auto* scripted = dynamic_cast<const ScriptedModelImpl*>(model.ptr().get())) {
    targets = scripted->NamedTensors();
  } else {
    for (const auto& p : model.ptr()->named_parameters(true))
      targets.emplace_back(p.key(), p.value());
    for (const auto& b : model.ptr()->named_buffers(true)) targets.emplace_back(b.key(), b.value());
  }
  for (const auto& [name, target] : targets) {
    const auto found = source->find(name);
    if (found == source->end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("init_from: the weights have no '", name, "', which the model has (",
                       source->size(), " tensors in the file, starting with '",
                       source->empty() ? "" : source->begin()->first, "')"));
    }
    if (found->second.sizes() != target.sizes()) {
      return absl::InvalidArgumentError(absl::StrCat("init_from: '", name, "' is ",
                                                     ShapeText(found->second), " in the file, ",
                                                     ShapeText(target), " in the model"));
    }
  }
  if (source->size() != targets.size()) {
    for (const auto& entry : *source) {
      const std::string& name = entry.first;
      const bool known = std::any_of(targets.begin(), targets.end(),
                                     [&name](const auto& t) { return t.first == name; });
      if (!known) {
        return absl::InvalidArgumentError(
            absl::StrCat("init_from: the weights have '", name, "', which the model does not"));
      }
    }
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, target] : targets) target.copy_(source->at(name));
  return static_cast<int>(targets.size());
}

namespace {

// For errors, which the job's owner reads: without the daemon's paths.
std::string InJobDirectory(const std::string& name) {
  return absl::StrCat(name, ".pt in the job's directory");
}

// Size and digest of the file as written.
absl::StatusOr<trainer::v1::Artifact> Describe(const std::string& path, const std::string& name,
                                               const std::string& format) {
  trainer::v1::Artifact artifact;
  artifact.set_name(name);
  artifact.set_format(format);
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return absl::InternalError(absl::StrCat("cannot stat ", path));
  artifact.set_size_bytes(st.st_size);
  ASSIGN_OR_RETURN(std::string digest, Sha256OfFile(path));
  artifact.set_sha256(digest);
  return artifact;
}

}  // namespace

bool HasStateDict(torch::nn::AnyModule& model) {
  return dynamic_cast<const ScriptedModelImpl*>(model.ptr().get()) == nullptr;
}

absl::StatusOr<StagedArtifact> StageStateDict(const c10::Dict<std::string, torch::Tensor>& state,
                                              const std::string& job_dir, const std::string& name) {
  StagedArtifact staged;
  staged.path = absl::StrCat(job_dir, "/", name, ".pt");
  const std::vector<char> bytes = StateDictBytes(state);
  const absl::string_view contents(bytes.data(), bytes.size());
  ASSIGN_OR_RETURN(staged.temp, StageFileDurably(staged.path, contents, InJobDirectory(name)));
  Sha256 digest;
  digest.Update(contents);
  staged.artifact.set_name(name);
  staged.artifact.set_format("state_dict");
  staged.artifact.set_size_bytes(static_cast<int64_t>(bytes.size()));
  staged.artifact.set_sha256(digest.HexDigest());
  return staged;
}

absl::StatusOr<trainer::v1::Artifact> CommitArtifact(const StagedArtifact& staged) {
  RETURN_IF_ERROR(CommitDurably(staged.temp, staged.path, IfPresent::kReplace,
                                InJobDirectory(staged.artifact.name())));
  return staged.artifact;
}

absl::StatusOr<trainer::v1::Artifact> SaveArtifact(torch::nn::AnyModule& model,
                                                   const std::string& job_dir,
                                                   const std::string& name) {
  if (HasStateDict(model)) {
    ASSIGN_OR_RETURN(StagedArtifact staged, StageStateDict(StateDict(*model.ptr()), job_dir, name));
    return CommitArtifact(staged);
  }
  const auto* scripted = dynamic_cast<const ScriptedModelImpl*>(model.ptr().get());
  const std::string path = absl::StrCat(job_dir, "/", name, ".pt");
  RETURN_IF_ERROR(WriteDurably(
      path,
      [scripted](const std::string& temp) {
        scripted->SaveScriptOnCpu(temp);
        return absl::OkStatus();
      },
      InJobDirectory(name)));
  return Describe(path, name, "torchscript");
}

}  // namespace traind
