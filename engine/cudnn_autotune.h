// Whether a job lets cuDNN time every algorithm for each new convolution shape before it first
// runs it. Measured on the H200 (docs/benchmarks-history.md, session 14): 1-7.6 s before the first
// step of VGG16 and ResNet-18 (the CUDA graph's capture: 0.14-0.23 s without), for steady-state
// epochs only 0.5-2.3% shorter (0.1-0.15 ms a step), so it pays back after about 12,000-50,000
// steps. Jobs planned for at least kAutotuneMinSteps steps tune; shorter ones take cuDNN's
// heuristics. TRAIND_CUDNN_AUTOTUNE=1 or 0 in the worker's environment decides instead
// (benchmarks).
#ifndef TRAIND_ENGINE_CUDNN_AUTOTUNE_H_
#define TRAIND_ENGINE_CUDNN_AUTOTUNE_H_

#include <cstdint>
#include <string>

namespace traind {

inline constexpr int64_t kAutotuneMinSteps = 50000;

// After ConfigureDevice (which turns autotuning on for CUDA): turns it off for a short job.
// Returns what the settings line should say instead of "cuDNN autotuning on" ("": unchanged).
std::string ChooseAutotuning(int64_t planned_steps);

}  // namespace traind

#endif  // TRAIND_ENGINE_CUDNN_AUTOTUNE_H_
