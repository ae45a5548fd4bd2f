#include "engine/job_globals.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include "gtest/gtest.h"

namespace traind {
namespace {

// What a job sets for the whole process (a deterministic job's flags, TF32, its thread count)
// is what a fresh worker had again once the job's globals are restored.
TEST(JobGlobalsTest, RestoringPutsBackWhatTheJobChanged) {
  const JobGlobals fresh = CaptureJobGlobals();
  at::Context& context = at::globalContext();
  context.setBenchmarkCuDNN(!fresh.benchmark_cudnn);
  context.setDeterministicCuDNN(!fresh.deterministic_cudnn);
  context.setDeterministicAlgorithms(!fresh.deterministic_algorithms, false);
  context.setAllowTF32CuDNN(!fresh.allow_tf32_cudnn);
  context.setAllowTF32CuBLAS(!fresh.allow_tf32_cublas);
  at::set_num_threads(fresh.intra_op_threads == 1 ? 2 : 1);
  ASSERT_NE(at::get_num_threads(), fresh.intra_op_threads);

  EXPECT_NE(CaptureJobGlobals(), fresh);
  RestoreJobGlobals(fresh);
  const JobGlobals restored = CaptureJobGlobals();
  EXPECT_EQ(restored.benchmark_cudnn, fresh.benchmark_cudnn);
  EXPECT_EQ(restored.deterministic_cudnn, fresh.deterministic_cudnn);
  EXPECT_EQ(restored.deterministic_algorithms, fresh.deterministic_algorithms);
  EXPECT_EQ(restored.deterministic_warn_only, fresh.deterministic_warn_only);
  EXPECT_EQ(restored.allow_tf32_cudnn, fresh.allow_tf32_cudnn);
  EXPECT_EQ(restored.allow_tf32_cublas, fresh.allow_tf32_cublas);
  EXPECT_EQ(restored.intra_op_threads, fresh.intra_op_threads);
}

}  // namespace
}  // namespace traind
