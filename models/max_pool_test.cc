// traind::MaxPool2d against ATen's max pooling: same outputs and input gradients, on the CPU
// (traind's NCHW kernels where the windows do not overlap, ATen's elsewhere) and, through traind's
// NHWC kernels, on CUDA in fp32 and bf16.
#include "models/max_pool.h"

#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "models/cpu/max_pool_nchw.h"
#include "models/own_kernels.h"

namespace traind {
namespace {

struct Case {
  int64_t n, c, h, w, kernel, stride, padding;
};

// Output and input gradient of ours and of ATen's on the same input and output gradient.
void ExpectMatchesATen(const Case& k, const torch::TensorOptions& options, double tolerance,
                       torch::MemoryFormat format = torch::MemoryFormat::ChannelsLast) {
  SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.h << "x" << k.w << " kernel "
                                  << k.kernel << " stride " << k.stride << " padding " << k.padding
                                  << " " << options.dtype() << " " << format);
  torch::manual_seed(2);
  // Rounded values repeat, so ties (the first index wins in ATen) get exercised too.
  torch::Tensor values = (torch::randn({k.n, k.c, k.h, k.w}) * 4).round();
  // A NaN wins its window in ATen; one in every 97 elements (not a window-aligned stride).
  values.view(-1).slice(0, 5, values.numel(), 97).fill_(std::numeric_limits<float>::quiet_NaN());
  const torch::Tensor input = values.to(options).contiguous(format);
  const torch::Tensor ours_in = input.clone().requires_grad_();
  const torch::Tensor theirs_in = input.clone().requires_grad_();
  MaxPool2d pool(k.kernel, k.stride, k.padding);
  const torch::Tensor ours = pool->forward(ours_in);
  const torch::Tensor theirs = torch::max_pool2d(theirs_in, {k.kernel, k.kernel},
                                                 {k.stride, k.stride}, {k.padding, k.padding});
  ASSERT_TRUE(torch::allclose(ours, theirs, 0, 0, /*equal_nan=*/true));
  {  // evaluation: the forward alone
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(torch::allclose(pool->forward(input), theirs, 0, 0, /*equal_nan=*/true));
  }
  const torch::Tensor grad =
      torch::randn(ours.sizes()).to(options).contiguous(torch::MemoryFormat::ChannelsLast);
  ours.backward(grad);
  theirs.backward(grad);
  // The gradient of a window whose maximum is NaN goes to the NaN, so gradients stay finite.
  const double difference = (ours_in.grad().to(torch::kFloat) - theirs_in.grad().to(torch::kFloat))
                                .abs()
                                .max()
                                .item<double>();
  EXPECT_LE(difference, tolerance);
  EXPECT_EQ(ours_in.grad().sizes(), input.sizes());
}

// Overlapping or padded windows and channels_last inputs go to ATen's max pooling: this checks
// that the module passes kernel, stride and padding through (swapped stride and padding would
// change the output's shape).
TEST(MaxPoolTest, PassesItsGeometryToATenOnTheCpu) {
  const auto fp32 = torch::TensorOptions(torch::kFloat);
  ExpectMatchesATen({2, 8, 9, 9, 3, 2, 1}, fp32, 0);
  ExpectMatchesATen({2, 3, 8, 8, 2, 2, 0}, fp32, 0);
  ExpectMatchesATen({2, 8, 9, 9, 3, 2, 1}, fp32, 0, torch::MemoryFormat::Contiguous);
  EXPECT_FALSE(MaxPoolNchwSupports(torch::zeros({2, 8, 9, 9}), 3, 2, 1));
  EXPECT_FALSE(MaxPoolNchwSupports(torch::zeros({2, 8, 8, 8}, torch::kDouble), 2, 2, 0));
}

// Non-overlapping windows of contiguous fp32 inputs take traind's NCHW kernels: LeNet5's two
// poolings, odd sizes (floor mode drops the last row and column), a 3x3 window, one channel.
TEST(MaxPoolTest, NchwKernelsMatchATenOnTheCpu) {
  ASSERT_TRUE(OwnCpuKernelsEnabled());  // else this would compare ATen with itself
  const auto fp32 = torch::TensorOptions(torch::kFloat);
  const auto nchw = torch::MemoryFormat::Contiguous;
  for (const Case& k :
       {Case{16, 6, 28, 28, 2, 2, 0}, Case{16, 16, 10, 10, 2, 2, 0}, Case{3, 5, 7, 9, 2, 2, 0},
        Case{2, 4, 10, 11, 3, 3, 0}, Case{5, 1, 6, 6, 2, 2, 0}}) {
    ASSERT_TRUE(
        MaxPoolNchwSupports(torch::zeros({k.n, k.c, k.h, k.w}), k.kernel, k.stride, k.padding));
    ExpectMatchesATen(k, fp32, 0, nchw);
  }
}

// Without a gradient (evaluation) the module takes the forward alone, with ATen's indices.
TEST(MaxPoolTest, NchwForwardGivesATenIndices) {
  torch::manual_seed(3);
  const torch::Tensor input = (torch::randn({4, 3, 12, 12}) * 2).round();
  const auto [output, indices] = MaxPoolNchwForward(input, 2);
  const auto [aten_output, aten_indices] = torch::max_pool2d_with_indices(input, {2, 2}, {2, 2});
  EXPECT_TRUE(output.equal(aten_output));
  EXPECT_TRUE(indices.equal(aten_indices));
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(MaxPool2d(2, 2)->forward(input).equal(aten_output));
}

// Whether traind's NHWC kernels (not ATen's) pooled this input in training.
bool TakesNhwcKernels(MaxPool2d pool, const torch::Tensor& input) {
  const torch::Tensor output = pool->forward(input.clone().requires_grad_());
  return output.grad_fn() &&
         output.grad_fn()->name().find("NhwcMaxPoolFunction") != std::string::npos;
}

TEST(MaxPoolTest, NhwcKernelsMatchATenOnCuda) {
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
    const torch::Tensor stem =
        torch::randn({2, 64, 20, 20}, options).contiguous(torch::MemoryFormat::ChannelsLast);
#ifdef TRAIND_HAVE_CUDA_KERNELS
    EXPECT_TRUE(TakesNhwcKernels(MaxPool2d(3, 2, 1), stem));
    EXPECT_TRUE(TakesNhwcKernels(MaxPool2d(2, 2), stem));
#endif
    EXPECT_FALSE(TakesNhwcKernels(MaxPool2d(3, 2, 1), torch::randn({2, 6, 8, 8}, options)));
    EXPECT_FALSE(TakesNhwcKernels(MaxPool2d(3, 2, 1), stem.contiguous()));  // NCHW
  }
}

}  // namespace
}  // namespace traind
