#include "engine/cudnn_autotune.h"

#include <ATen/Context.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace traind {

std::string ChooseAutotuning(int64_t planned_steps) {
  if (!at::globalContext().benchmarkCuDNN()) return "";  // not CUDA, or --deterministic
  const char* forced = std::getenv("TRAIND_CUDNN_AUTOTUNE");
  if (forced != nullptr && std::string(forced) == "1") return "";
  const bool off =
      forced != nullptr ? std::string(forced) == "0" : planned_steps < kAutotuneMinSteps;
  if (!off) return "";
  at::globalContext().setBenchmarkCuDNN(false);
  return forced != nullptr ? "cuDNN autotuning off (TRAIND_CUDNN_AUTOTUNE=0)"
                           : absl::StrCat("cuDNN autotuning off (", planned_steps,
                                          " steps planned: tuning pays back after about ",
                                          kAutotuneMinSteps, ")");
}

}  // namespace traind
