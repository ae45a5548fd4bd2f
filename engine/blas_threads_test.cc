#include "engine/blas_threads.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace traind {
namespace {

// The BLAS LibTorch loaded here (Debian: OpenBLAS, which deploy/install-deps.sh installs) takes
// the thread count it is given, and products still compute the same after it.
TEST(BlasThreadsTest, TheLoadedOpenBlasTakesTheJobsThreads) {
  const torch::Tensor a = torch::randn({256, 256});
  const torch::Tensor b = torch::randn({256, 256});
  const torch::Tensor before = torch::mm(a, b);
  const BlasThreads two = SetBlasThreads(2);
  if (!two.settable)
    GTEST_SKIP() << "the BLAS this LibTorch loaded has no thread switch (not OpenBLAS)";
  EXPECT_NE(two.library.find("OpenBLAS"), std::string::npos) << two.library;
  const BlasThreads one = SetBlasThreads(1);
  EXPECT_EQ(one.before, two.after);
  EXPECT_EQ(one.after, 1);
  EXPECT_TRUE(torch::allclose(torch::mm(a, b), before, 1e-4, 1e-4));
  EXPECT_EQ(SetBlasThreads(0).after, 1);  // never none
}

TEST(BlasThreadsTest, TheLogLineSaysWhatChanged) {
  BlasThreads blas;
  EXPECT_EQ(DescribeBlasThreads(blas), "");  // nothing to set, nothing said
  blas.settable = true;
  blas.library = "OpenBLAS 0.3.21 (pthreads)";
  blas.before = 2;
  blas.after = 1;
  EXPECT_EQ(DescribeBlasThreads(blas), "OpenBLAS 0.3.21 (pthreads): 1 thread (was 2)");
  blas.before = 4;
  blas.after = 4;
  EXPECT_EQ(DescribeBlasThreads(blas), "OpenBLAS 0.3.21 (pthreads): 4 threads");
}

}  // namespace
}  // namespace traind
