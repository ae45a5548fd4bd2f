// MaxPoolThenTanh against ATen's max pooling followed by its tanh: same outputs and input
// gradients, through traind's fused NCHW kernels on CUDA (fp32 and bf16) and the two modules
// elsewhere.
#include "models/max_pool_tanh.h"

#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "models/own_kernels.h"

namespace traind {
namespace {

struct Case {
  int64_t n, c, h, w, kernel;
};

// The largest difference of two tensors where both are numbers; NaNs must sit at the same places.
double LargestDifference(const torch::Tensor& a, const torch::Tensor& b) {
  const torch::Tensor a32 = a.to(torch::kFloat), b32 = b.to(torch::kFloat);
  EXPECT_TRUE(a32.isnan().equal(b32.isnan()));
  return (a32 - b32).abs().nan_to_num(0).max().item<double>();
}

void ExpectMatchesATen(const Case& k, const torch::TensorOptions& options, double tolerance) {
  SCOPED_TRACE(testing::Message() << k.n << "x" << k.c << "x" << k.h << "x" << k.w << " kernel "
                                  << k.kernel << " " << options.dtype() << " " << options.device());
  torch::manual_seed(4);
  // Rounded values repeat, so ties (the first element wins in ATen) get exercised; large ones
  // saturate tanh.
  torch::Tensor values = (torch::randn({k.n, k.c, k.h, k.w}) * 4).round();
  values.view(-1).slice(0, 5, values.numel(), 97).fill_(std::numeric_limits<float>::quiet_NaN());
  const torch::Tensor input = values.to(options);
  const torch::Tensor ours_in = input.clone().requires_grad_();
  const torch::Tensor theirs_in = input.clone().requires_grad_();
  MaxPool2d pool(k.kernel, k.kernel);
  const torch::Tensor ours = MaxPoolThenTanh(ours_in, *pool);
  const torch::Tensor theirs =
      torch::tanh(torch::max_pool2d(theirs_in, {k.kernel, k.kernel}, {k.kernel, k.kernel}));
  ASSERT_EQ(ours.sizes(), theirs.sizes());
  EXPECT_LE(LargestDifference(ours, theirs), tolerance);
  {  // evaluation: the forward alone
    torch::NoGradGuard no_grad;
    EXPECT_LE(LargestDifference(MaxPoolThenTanh(input, *pool), theirs), tolerance);
  }
  const torch::Tensor grad = torch::randn(ours.sizes()).to(options);
  ours.backward(grad);
  theirs.backward(grad);
  ASSERT_EQ(ours_in.grad().sizes(), input.sizes());
  // Each window's gradient goes to the element its maximum was, and nowhere else.
  EXPECT_TRUE(ours_in.grad().ne(0).equal(theirs_in.grad().ne(0)));
  EXPECT_LE(LargestDifference(ours_in.grad(), theirs_in.grad()), tolerance);
}

// Whether the fused kernels (not the two modules) ran this pooling in training.
bool TakesFusedKernels(int64_t kernel, int64_t stride, int64_t padding,
                       const torch::Tensor& input) {
  MaxPool2d pool(kernel, stride, padding);
  const torch::Tensor output = MaxPoolThenTanh(input.clone().requires_grad_(), *pool);
  return output.grad_fn() &&
         output.grad_fn()->name().find("MaxPoolTanhFunction") != std::string::npos;
}

TEST(MaxPoolTanhTest, IsThePoolingThenTanhOnTheCpu) {
  const auto fp32 = torch::TensorOptions(torch::kFloat);
  ExpectMatchesATen({4, 6, 28, 28, 2}, fp32, 0);
  EXPECT_FALSE(TakesFusedKernels(2, 2, 0, torch::randn({2, 6, 8, 8})));
}

TEST(MaxPoolTanhTest, FusedKernelsMatchATenOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
#ifdef TRAIND_HAVE_CUDA_KERNELS
  ASSERT_TRUE(OwnCudaKernelsEnabled());  // else this would compare ATen with itself
#endif
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const auto options = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
    // fp32: tanh and its gradient's rounding only; bf16: one bf16 ulp of values up to ~4.
    const double tolerance = dtype == torch::kFloat ? 1e-6 : 0.05;
    ExpectMatchesATen({64, 6, 28, 28, 2}, options, tolerance);   // LeNet5's first pooling
    ExpectMatchesATen({64, 16, 10, 10, 2}, options, tolerance);  // its second
    ExpectMatchesATen({3, 5, 9, 12, 3}, options, tolerance);     // 3x3 windows
    ExpectMatchesATen({2, 3, 5, 7, 1}, options, tolerance);      // 1x1: tanh alone
    ExpectMatchesATen({2, 6, 9, 9, 2}, options, tolerance);      // odd sizes: not taken
    const torch::Tensor lenet = torch::randn({4, 6, 28, 28}, options);
#ifdef TRAIND_HAVE_CUDA_KERNELS
    EXPECT_TRUE(TakesFusedKernels(2, 2, 0, lenet));
#endif
    EXPECT_FALSE(TakesFusedKernels(2, 2, 0, torch::randn({2, 6, 9, 9}, options)));
    EXPECT_FALSE(TakesFusedKernels(3, 2, 1, lenet));  // overlapping windows
    EXPECT_FALSE(TakesFusedKernels(2, 2, 0, lenet.to(torch::kHalf)));
    EXPECT_FALSE(TakesFusedKernels(2, 2, 0, lenet.contiguous(torch::MemoryFormat::ChannelsLast)));
  }
}

}  // namespace
}  // namespace traind
