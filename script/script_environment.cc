#include "script/script_environment.h"

#include <algorithm>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/cpu_threads.h"

namespace traind {

namespace {

// "cuda:3" -> "3"; "" for anything else.
std::string CudaIndex(absl::string_view device) {
  return absl::StartsWith(device, "cuda:") ? std::string(device.substr(5)) : "";
}

}  // namespace

std::vector<std::string> ScriptEnvironment(const trainer::v1::WorkerRequest& request,
                                           const ScriptDirectories& directories,
                                           const std::vector<std::string>& inherited,
                                           const std::string& job_devices) {
  std::map<std::string, std::string> variables;
  for (const std::string& entry : inherited) {
    const size_t equals = entry.find('=');
    if (equals == std::string::npos) continue;
    const std::string name = entry.substr(0, equals);
    if (absl::StartsWith(name, "TRAIND_")) continue;
    variables[name] = entry.substr(equals + 1);
  }
  const std::string& device = request.spec().device();
  if (absl::StartsWith(device, "cuda")) {
    std::vector<std::string> indices;
    for (absl::string_view each : absl::StrSplit(job_devices.empty() ? device : job_devices, ',')) {
      indices.push_back(CudaIndex(each));
    }
    variables["CUDA_VISIBLE_DEVICES"] = absl::StrJoin(indices, ",");
    variables["TRAIND_DEVICE"] = "cuda";
  } else {
    variables["TRAIND_DEVICE"] = device.empty() ? "cpu" : device;
    if (device != "mps") variables["CUDA_VISIBLE_DEVICES"] = "";
  }
  variables["TRAIND_JOB_ID"] = absl::StrCat(request.job_id());
  variables["TRAIND_CHECKPOINT_DIR"] = directories.checkpoints;
  // A search's trial: the traind package pauses the program after this epoch's checkpoint.
  if (request.pause_after_epoch() > 0) {
    variables["TRAIND_PAUSE_AFTER_EPOCH"] = absl::StrCat(request.pause_after_epoch());
  }
  variables["TRAIND_OUTPUT_DIR"] = directories.outputs;
  variables["TMPDIR"] = directories.temp;
  variables["PYTHONUNBUFFERED"] = "1";
  // Its own --threads, or its share of the cores when a search packs it with others
  // (WorkerRequest.cpu_sharers), as a built-in trial's intra-op threads are divided.
  int threads = request.spec().threads();
  if (threads == 0 && request.cpu_sharers() > 1) {
    threads = std::max(1, UsableCores(ReadCpuFacts()) / request.cpu_sharers());
  }
  if (threads > 0) {
    variables["OMP_NUM_THREADS"] = absl::StrCat(threads);
    variables["MKL_NUM_THREADS"] = absl::StrCat(threads);
  }
  // traind's ranks of one job all run on this machine.
  if (variables.count("WORLD_SIZE") && !variables.count("LOCAL_WORLD_SIZE")) {
    variables["LOCAL_WORLD_SIZE"] = variables["WORLD_SIZE"];
  }
  std::vector<std::string> environment;
  for (const auto& [name, value] : variables) environment.push_back(name + "=" + value);
  return environment;
}

}  // namespace traind
