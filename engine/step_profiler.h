// StepProfiler: LibTorch's profiler over a window of training steps. Turns the recorded ranges
// into operator self times (time in an operator minus time in the operators it called) and writes
// a Chrome trace. Where LibTorch has CUDA (2.x), it profiles through Kineto, which also records
// the GPU's kernels (inside CUDA graphs too): the result then lists them by device time, and the
// trace shows both timelines. Elsewhere (Debian's LibTorch 1.13) it uses the legacy CPU-side
// profiler. Use from the training thread only.
#ifndef TRAIND_ENGINE_STEP_PROFILER_H_
#define TRAIND_ENGINE_STEP_PROFILER_H_

#include <string>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class StepProfiler {
 public:
  static constexpr int kTopOperators = 15;
  static constexpr int kTopKernels = 15;
  static constexpr size_t kMaxNameBytes = 160;  // kernel names run to kilobytes of templates

  StepProfiler() = default;
  // Turns the profiler off if it is still running (a job that ended inside its window).
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  void Start();
  // Stops, writes the trace to `trace_path` and returns the top operators by self time.
  absl::StatusOr<trainer::v1::ProfileResult> Stop(const std::string& trace_path, int steps);
  bool running() const { return running_; }

 private:
  bool running_ = false;
};

}  // namespace traind

#endif  // TRAIND_ENGINE_STEP_PROFILER_H_
