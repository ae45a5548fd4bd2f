// traind::MaxPool2d against ATen's max pooling: same outputs and input gradients, on the CPU and,
// through traind's NHWC backward kernel, on CUDA in fp32 and bf16.
#include "models/max_pool.h"

#include "gtest/gtest.h"
#include "models/own_kernels.h"

namespace traind {
namespace {

struct Case {
  int64_t n, c, h, w, kernel, stride, padding;
};

// Output and input gradient of ours and of ATen's on the same input and output gradient.
void ExpectMatchesATen(const Case& k, const torch::TensorOptions& options, double tolerance) {
  SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.h << "x" << k.w << " kernel "
                                  << k.kernel << " stride " << k.stride << " padding " << k.padding
                                  << " " << options.dtype());
  torch::manual_seed(2);
  // Rounded values repeat, so ties (the first index wins in ATen) get exercised too.
  const torch::Tensor input = (torch::randn({k.n, k.c, k.h, k.w}) * 4)
                                  .round()
                                  .to(options)
                                  .contiguous(torch::MemoryFormat::ChannelsLast);
  const torch::Tensor ours_in = input.clone().requires_grad_();
  const torch::Tensor theirs_in = input.clone().requires_grad_();
  MaxPool2d pool(k.kernel, k.stride, k.padding);
  const torch::Tensor ours = pool->forward(ours_in);
  const torch::Tensor theirs = torch::max_pool2d(theirs_in, {k.kernel, k.kernel},
                                                 {k.stride, k.stride}, {k.padding, k.padding});
  ASSERT_TRUE(ours.equal(theirs));
  const torch::Tensor grad =
      torch::randn(ours.sizes()).to(options).contiguous(torch::MemoryFormat::ChannelsLast);
  ours.backward(grad);
  theirs.backward(grad);
  const double difference = (ours_in.grad().to(torch::kFloat) - theirs_in.grad().to(torch::kFloat))
                                .abs()
                                .max()
                                .item<double>();
  EXPECT_LE(difference, tolerance);
  EXPECT_EQ(ours_in.grad().sizes(), input.sizes());
}

// On the CPU the module is ATen's max pooling itself: this checks that it passes kernel, stride
// and padding through (swapped stride and padding would change the output's shape).
TEST(MaxPoolTest, PassesItsGeometryToATenOnTheCpu) {
  ExpectMatchesATen({2, 8, 9, 9, 3, 2, 1}, torch::TensorOptions(torch::kFloat), 0);
  ExpectMatchesATen({2, 3, 8, 8, 2, 2, 0}, torch::TensorOptions(torch::kFloat), 0);
}

TEST(MaxPoolTest, NhwcBackwardMatchesATenOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
#ifdef TRAIND_HAVE_CUDA_KERNELS
  ASSERT_TRUE(OwnCudaKernelsEnabled());  // else this would compare ATen with itself
#endif
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const auto options = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
    // fp32 sums of up to four gradients in another order: rounding only; bf16: one bf16 ulp.
    const double tolerance = dtype == torch::kFloat ? 1e-5 : 0.05;
    ExpectMatchesATen({4, 64, 112, 112, 3, 2, 1}, options, tolerance);  // ResNet-18's stem
    ExpectMatchesATen({2, 128, 28, 28, 2, 2, 0}, options, tolerance);   // VGG16's
    ExpectMatchesATen({3, 16, 7, 9, 3, 2, 1}, options, tolerance);      // odd sizes
    ExpectMatchesATen({2, 6, 8, 8, 2, 2, 0}, options, tolerance);       // not taken: ATen's
  }
}

}  // namespace
}  // namespace traind
