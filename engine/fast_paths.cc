#include "engine/fast_paths.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace traind {
namespace {

std::string Mib(int64_t bytes) { return absl::StrCat((bytes + (1 << 20) - 1) >> 20, " MiB"); }

// Why the captured step cannot run this job; "" when it can. The same conditions that refuse an
// explicit cuda_graph at submit, plus what only the worker knows.
std::string WhyNoGraph(const trainer::v1::JobSpec& spec, const FastPathFacts& facts) {
  if (!facts.graphs_built) return "this traind's LibTorch cannot capture CUDA graphs";
  if (spec.has_benchmark()) return "a benchmark (it times the eager step)";
  if (spec.evaluate_only()) return "evaluation only";
  // Capturing a module traind did not write may fail (a host sync, data-dependent control flow);
  // the eager fallback for that is not yet tried on a GPU, so such modules are not captured
  // unless asked.
  if (spec.model() == "torchscript") {
    return "a TorchScript module is captured only when asked (--cuda-graph)";
  }
  if (spec.optimizer() != "adam" && spec.optimizer() != "adamw") {
    return absl::StrCat("optimizer ", spec.optimizer(),
                        " (the captured update is the fused Adam/AdamW)");
  }
  if (spec.accumulate() > 1) return "accumulate > 1";
  if (spec.amp() == "fp16") return "amp fp16 (its loss scaling reads the gradients on the host)";
  if (spec.random_crop_padding() > 0 || spec.horizontal_flip()) {
    return "augmentation (random crop, flip)";
  }
  if (facts.data_parallel) return "data parallel (the ranks all-reduce between steps)";
  if (spec.batch_size_auto()) {
    return "batch size auto (the batch was sized for the eager step's memory)";
  }
  return "";
}

}  // namespace

FastPaths ChooseFastPaths(const trainer::v1::JobSpec& spec, const FastPathFacts& facts) {
  FastPaths paths;
  if (!facts.cuda) {
    // CPU data is already where the CPU computes; graphs are CUDA's. MPS: an explicit
    // device_resident is honoured, nothing is on by default (not measured there).
    paths.device_resident = spec.has_device_resident() && spec.device_resident();
    // Asked for off CUDA (a device left to the daemon's choice): the step says why it cannot.
    paths.cuda_graph = spec.has_cuda_graph() && spec.cuda_graph();
    return paths;
  }
  std::vector<std::string> on, off;
  if (spec.has_device_resident()) {
    paths.device_resident = spec.device_resident();
    if (!paths.device_resident) off.push_back("no device-resident data (asked)");
  } else if (facts.free_device_bytes > 0 &&
             facts.dataset_bytes > facts.free_device_bytes / kResidentShareDivisor) {
    off.push_back(absl::StrCat("no device-resident data (the dataset's ", Mib(facts.dataset_bytes),
                               " exceed a quarter of the device's ", Mib(facts.free_device_bytes),
                               " free)"));
  } else {
    paths.device_resident = true;
  }
  if (paths.device_resident) {
    on.push_back(absl::StrCat("device-resident data (", Mib(facts.dataset_bytes), ")"));
  }

  if (spec.has_cuda_graph()) {
    paths.cuda_graph = spec.cuda_graph();
    if (!paths.cuda_graph) off.push_back("no CUDA graph (asked)");
  } else if (const std::string why = WhyNoGraph(spec, facts); !why.empty()) {
    off.push_back(absl::StrCat("no CUDA graph: ", why));
  } else {
    paths.cuda_graph = true;
  }
  if (paths.cuda_graph) on.push_back("CUDA graph");

  paths.explanation = absl::StrCat("Fast paths: ", on.empty() ? "none" : absl::StrJoin(on, ", "),
                                   off.empty() ? "" : "; ", absl::StrJoin(off, "; "));
  return paths;
}

}  // namespace traind
