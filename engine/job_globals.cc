#include "engine/job_globals.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include "engine/device.h"

namespace traind {

JobGlobals CaptureJobGlobals() {
  const at::Context& context = at::globalContext();
  JobGlobals globals;
  globals.benchmark_cudnn = context.benchmarkCuDNN();
  globals.deterministic_cudnn = context.deterministicCuDNN();
  globals.deterministic_algorithms = context.deterministicAlgorithms();
  globals.deterministic_warn_only = context.deterministicAlgorithmsWarnOnly();
  globals.allow_tf32_cudnn = context.allowTF32CuDNN();
  globals.allow_tf32_cublas = context.allowTF32CuBLAS();
  globals.intra_op_threads = at::get_num_threads();
  return globals;
}

void RestoreJobGlobals(const JobGlobals& globals, const std::string& device) {
  at::Context& context = at::globalContext();
  context.setBenchmarkCuDNN(globals.benchmark_cudnn);
  context.setDeterministicCuDNN(globals.deterministic_cudnn);
  context.setDeterministicAlgorithms(globals.deterministic_algorithms,
                                     globals.deterministic_warn_only);
  context.setAllowTF32CuDNN(globals.allow_tf32_cudnn);
  context.setAllowTF32CuBLAS(globals.allow_tf32_cublas);
  if (at::get_num_threads() != globals.intra_op_threads) {
    at::set_num_threads(globals.intra_op_threads);
  }
  try {
    const torch::Device used(device);
    if (!used.is_cpu()) ReleaseCachedMemory(used);
  } catch (const std::exception&) {  // not a device's name: the job did not run on one
  }
}

}  // namespace traind
