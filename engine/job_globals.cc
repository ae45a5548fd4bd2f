#include "engine/job_globals.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

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

bool JobGlobals::operator==(const JobGlobals& other) const {
  return benchmark_cudnn == other.benchmark_cudnn &&
         deterministic_cudnn == other.deterministic_cudnn &&
         deterministic_algorithms == other.deterministic_algorithms &&
         deterministic_warn_only == other.deterministic_warn_only &&
         allow_tf32_cudnn == other.allow_tf32_cudnn &&
         allow_tf32_cublas == other.allow_tf32_cublas && intra_op_threads == other.intra_op_threads;
}

void RestoreJobGlobals(const JobGlobals& globals) {
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
}

}  // namespace traind
