#include "engine/artifacts.h"

#include <sys/stat.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "engine/durable_file.h"
#include "models/scripted_model.h"

namespace traind {

c10::Dict<std::string, torch::Tensor> StateDict(const torch::nn::Module& module) {
  c10::Dict<std::string, torch::Tensor> state;
  // The CPU and the standard layout: readable on any machine, channels_last weights included.
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    state.insert(p.key(), p.value().detach().to(torch::kCPU).contiguous());
  }
  for (const auto& b : module.named_buffers(/*recurse=*/true)) {
    state.insert(b.key(), b.value().detach().to(torch::kCPU).contiguous());
  }
  return state;
}

absl::StatusOr<trainer::v1::Artifact> SaveArtifact(torch::nn::AnyModule& model,
                                                   const std::string& job_dir,
                                                   const std::string& name) {
  const std::string path = absl::StrCat(job_dir, "/", name, ".pt");
  trainer::v1::Artifact artifact;
  artifact.set_name(name);
  const auto* scripted = dynamic_cast<const ScriptedModelImpl*>(model.ptr().get());
  std::function<void(const std::string&)> write;
  if (scripted != nullptr) {
    artifact.set_format("torchscript");
    write = [scripted](const std::string& temp) { scripted->SaveScriptOnCpu(temp); };
  } else {
    artifact.set_format("state_dict");
    write = [&model](const std::string& temp) {
      const std::vector<char> bytes = torch::pickle_save(StateDict(*model.ptr()));
      std::ofstream out(temp, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    };
  }
  RETURN_IF_ERROR(WriteDurably(write, path));
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return absl::InternalError(absl::StrCat("cannot stat ", path));
  artifact.set_size_bytes(st.st_size);
  ASSIGN_OR_RETURN(std::string digest, Sha256OfFile(path));
  artifact.set_sha256(digest);
  return artifact;
}

}  // namespace traind
