// traind::BatchNorm2d against LibTorch's: same state (checkpoints load either way), same results
// on the CPU, and on CUDA the fused NHWC kernels (bf16 and fp32) against PyTorch's native batch
// norm.
#include "models/batch_norm.h"

#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace traind {
namespace {

// Max |a - b| over the elements, in fp32.
double MaxDifference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat) - b.to(torch::kFloat)).abs().max().item<double>();
}

// Random CUDA activations of `type` in channels_last, with an offset mean and a wide spread, as
// after a convolution.
torch::Tensor LikeAConvolution(c10::IntArrayRef shape, torch::ScalarType type, double scale,
                               double offset) {
  return (torch::randn(shape, torch::TensorOptions().device(torch::kCUDA)) * scale + offset)
      .to(type)
      .contiguous(torch::MemoryFormat::ChannelsLast);
}

// Moves both layers to CUDA and gives them the same random weight and bias, so that the affine
// part of the kernels is exercised, not only the normalisation.
void OnCudaWithTheSameRandomAffine(BatchNorm2d& ours, torch::nn::BatchNorm2d& theirs) {
  ours->to(torch::kCUDA);
  theirs->to(torch::kCUDA);
  torch::NoGradGuard no_grad;
  ours->weight.uniform_(0.5, 1.5);
  theirs->weight.copy_(ours->weight);
  ours->bias.uniform_(-1, 1);
  theirs->bias.copy_(ours->bias);
}

TEST(BatchNormTest, HasLibTorchsStateSoCheckpointsLoadEitherWay) {
  torch::nn::BatchNorm2d theirs(16);
  BatchNorm2d ours(16);
  std::vector<std::string> their_names, our_names;
  for (const auto& item : theirs->named_parameters()) their_names.push_back(item.key());
  for (const auto& item : theirs->named_buffers()) their_names.push_back(item.key());
  for (const auto& item : ours->named_parameters()) our_names.push_back(item.key());
  for (const auto& item : ours->named_buffers()) our_names.push_back(item.key());
  EXPECT_EQ(our_names, their_names);

  theirs->train();
  theirs->forward(torch::randn({4, 16, 5, 5}) * 3 + 1);  // non-trivial running statistics
  torch::NoGradGuard no_grad;
  theirs->weight.uniform_();
  torch::serialize::OutputArchive archive;
  theirs->save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  std::istringstream in(bytes.str());
  torch::serialize::InputArchive loaded;
  loaded.load_from(in);
  ours->load(loaded);
  EXPECT_TRUE(ours->running_mean.equal(theirs->running_mean));
  EXPECT_TRUE(ours->running_var.equal(theirs->running_var));
  EXPECT_TRUE(ours->weight.equal(theirs->weight));
  EXPECT_EQ(ours->num_batches_tracked.item<int64_t>(), 1);
}

TEST(BatchNormTest, MatchesLibTorchsOnTheCpuInTrainingAndEvaluation) {
  torch::manual_seed(3);
  torch::nn::BatchNorm2d theirs(8);
  BatchNorm2d ours(8);
  const torch::Tensor input = torch::randn({6, 8, 4, 4}) * 2 + 0.5;
  const torch::Tensor our_input = input.clone().requires_grad_();
  const torch::Tensor their_input = input.clone().requires_grad_();
  const torch::Tensor grad = torch::randn({6, 8, 4, 4});
  ours->forward(our_input).backward(grad);
  theirs->forward(their_input).backward(grad);
  EXPECT_LT(MaxDifference(our_input.grad(), their_input.grad()), 1e-5);
  EXPECT_LT(MaxDifference(ours->weight.grad(), theirs->weight.grad()), 1e-4);
  EXPECT_LT(MaxDifference(ours->running_var, theirs->running_var), 1e-6);
  EXPECT_EQ(ours->num_batches_tracked.item<int64_t>(), 1);
  ours->eval();
  theirs->eval();
  EXPECT_LT(MaxDifference(ours->forward(input), theirs->forward(input)), 1e-5);
}

TEST(BatchNormTest, WithReluIsBatchNormThenRelu) {
  torch::manual_seed(5);
  torch::nn::BatchNorm2d theirs(8);
  BatchNorm2d ours(8, /*relu=*/true);
  const torch::Tensor input = torch::randn({6, 8, 4, 4});
  const torch::Tensor our_input = input.clone().requires_grad_();
  const torch::Tensor their_input = input.clone().requires_grad_();
  const torch::Tensor grad = torch::randn({6, 8, 4, 4});
  const torch::Tensor our_output = ours->forward(our_input);
  const torch::Tensor their_output = torch::relu(theirs->forward(their_input));
  EXPECT_LT(MaxDifference(our_output, their_output), 1e-5);
  EXPECT_GT((our_output == 0).sum().item<int64_t>(), 0);  // the ReLU did cut
  our_output.backward(grad);
  their_output.backward(grad);
  EXPECT_LT(MaxDifference(our_input.grad(), their_input.grad()), 1e-5);
  EXPECT_LT(MaxDifference(ours->bias.grad(), theirs->bias.grad()), 1e-4);
}

TEST(BatchNormTest, ForwardAddReluIsBatchNormThenAddThenRelu) {
  torch::manual_seed(6);
  torch::nn::BatchNorm2d theirs(8);
  BatchNorm2d ours(8);
  const torch::Tensor input = torch::randn({6, 8, 4, 4});
  const torch::Tensor residual = torch::randn({6, 8, 4, 4});
  const torch::Tensor our_input = input.clone().requires_grad_();
  const torch::Tensor their_input = input.clone().requires_grad_();
  const torch::Tensor our_residual = residual.clone().requires_grad_();
  const torch::Tensor their_residual = residual.clone().requires_grad_();
  const torch::Tensor grad = torch::randn({6, 8, 4, 4});
  const torch::Tensor our_output = ours->ForwardAddRelu(our_input, our_residual);
  const torch::Tensor their_output = torch::relu(theirs->forward(their_input) + their_residual);
  EXPECT_LT(MaxDifference(our_output, their_output), 1e-5);
  EXPECT_GT((our_output == 0).sum().item<int64_t>(), 0);  // the ReLU did cut
  our_output.backward(grad);
  their_output.backward(grad);
  EXPECT_LT(MaxDifference(our_input.grad(), their_input.grad()), 1e-5);
  EXPECT_LT(MaxDifference(our_residual.grad(), their_residual.grad()), 1e-6);
  EXPECT_LT(MaxDifference(ours->weight.grad(), theirs->weight.grad()), 1e-4);
  EXPECT_EQ(ours->num_batches_tracked.item<int64_t>(), 1);
  // A layer with its own ReLU would cut before the addition: refused, as is a residual of
  // another size.
  BatchNorm2d with_relu(8, /*relu=*/true);
  EXPECT_THROW(with_relu->ForwardAddRelu(input, residual), c10::Error);
  EXPECT_THROW(ours->ForwardAddRelu(input, torch::randn({6, 8, 4, 5})), c10::Error);
}

TEST(BatchNormTest, ForwardMaxPoolIsBatchNormReluThenThePool) {
  torch::manual_seed(8);
  BatchNorm2d ours(8, /*relu=*/true);
  MaxPool2d pool(/*kernel=*/3, /*stride=*/2, /*padding=*/1);
  const torch::Tensor input = torch::randn({4, 8, 9, 9});
  EXPECT_TRUE(ours->ForwardMaxPool(input, *pool).equal(pool->forward(ours->forward(input))));
  EXPECT_EQ(ours->num_batches_tracked.item<int64_t>(), 2);
  BatchNorm2d without_relu(8);
  EXPECT_THROW(without_relu->ForwardMaxPool(input, *pool), c10::Error);
}

// Off the fused path (here: the CPU) an output that feeds two layers is one tensor, so that
// autograd adds its two gradients as it does for any tensor used twice.
TEST(BatchNormTest, TwinsAreOneTensorOffTheFusedPath) {
  torch::manual_seed(9);
  BatchNorm2d adds(8), pools(8, /*relu=*/true);
  MaxPool2d pool(/*kernel=*/3, /*stride=*/2, /*padding=*/1);
  const torch::Tensor input = torch::randn({4, 8, 6, 6});
  const TwinActivation added = adds->ForwardAddReluTwin(input, torch::randn({4, 8, 6, 6}));
  EXPECT_TRUE(added.main.is_same(added.shortcut));
  const TwinActivation pooled = pools->ForwardMaxPoolTwin(input, *pool);
  EXPECT_TRUE(pooled.main.is_same(pooled.shortcut));
  EXPECT_TRUE(pooled.main.equal(pools->ForwardMaxPool(input, *pool)));
}

TEST(BatchNormTest, RefusesOneValuePerChannelInTrainingAndNon4dInput) {
  BatchNorm2d norm(4);
  EXPECT_THROW(norm->forward(torch::randn({1, 4, 1, 1})), c10::Error);
  EXPECT_THROW(norm->forward(torch::randn({2, 4, 3})), c10::Error);
}

// The fused path against at::batch_norm's native kernels (and torch::relu), both from the same
// input. In bf16 both round their output to bf16, so they may differ by a unit in the last place
// of bf16 (2^-8 relative) and by fp32 summation order; in fp32 by summation order only.
TEST(BatchNormTest, FusedKernelsMatchPyTorchsOnCudaInBf16AndFp32) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const torch::ScalarType type : {torch::kBFloat16, torch::kFloat}) {
    const bool bf16 = type == torch::kBFloat16;
    // Outputs are O(1): a bf16 ulp is 2^-7 near 1-2, so a few of those; fp32 agrees far closer.
    const double output_bound = bf16 ? 0.05 : 1e-4;
    const double relative_grad_bound = bf16 ? 0.02 : 1e-3;
    struct Shape {
      int64_t n, c, h, w;
    };
    // VGG16's and ResNet-18's shapes, small; then a channel count the kernels do not take.
    for (const bool relu : {false, true}) {
      for (const Shape s :
           {Shape{8, 64, 56, 56}, Shape{32, 512, 7, 7}, Shape{3, 96, 5, 7}, Shape{4, 12, 6, 6}}) {
        SCOPED_TRACE(testing::Message() << (bf16 ? "bf16 " : "fp32 ") << s.n << "x" << s.c << "x"
                                        << s.h << "x" << s.w << (relu ? " with ReLU" : ""));
        torch::manual_seed(11);
        const torch::Tensor input = LikeAConvolution({s.n, s.c, s.h, s.w}, type, 4, 3);
        const torch::Tensor grad = torch::randn_like(input);
        BatchNorm2d ours(s.c, relu);
        torch::nn::BatchNorm2d theirs(s.c);
        OnCudaWithTheSameRandomAffine(ours, theirs);
#ifdef TRAIND_HAVE_CUDA_KERNELS
        EXPECT_EQ(UsesFusedBatchNorm(input), s.c % 8 == 0);
#endif
        const torch::Tensor our_input = input.clone().requires_grad_();
        const torch::Tensor their_input = input.clone().requires_grad_();
        const torch::Tensor our_output = ours->forward(our_input);
        torch::Tensor their_output = theirs->forward(their_input);
        if (relu) their_output = torch::relu(their_output);
        EXPECT_EQ(our_output.scalar_type(), type);
        EXPECT_TRUE(our_output.is_contiguous(torch::MemoryFormat::ChannelsLast));
        our_output.backward(grad);
        their_output.backward(grad);
        EXPECT_LT(MaxDifference(our_output, their_output), output_bound);
        EXPECT_LT(MaxDifference(ours->running_mean, theirs->running_mean), 1e-3);
        EXPECT_LT(MaxDifference(ours->running_var, theirs->running_var), 1e-2);
        const double grad_scale = their_input.grad().abs().max().item<double>();
        // With a ReLU, an output within rounding of zero may be cut on one side and not the other;
        // such elements are allowed, a handful at most.
        const int64_t off =
            ((our_input.grad().to(torch::kFloat) - their_input.grad().to(torch::kFloat)).abs() >
             relative_grad_bound * grad_scale)
                .sum()
                .item<int64_t>();
        EXPECT_LE(off, relu ? 1 + input.numel() / 100000 : 0);
        const double weight_scale = theirs->weight.grad().abs().max().item<double>();
        EXPECT_LT(MaxDifference(ours->weight.grad(), theirs->weight.grad()), 0.01 * weight_scale);
        const double bias_scale = theirs->bias.grad().abs().max().item<double>();
        EXPECT_LT(MaxDifference(ours->bias.grad(), theirs->bias.grad()), 0.01 * bias_scale);
      }
    }
  }
}

// The fused relu(batch_norm(x) + residual) against at::batch_norm, an addition and torch::relu in
// fp32 on the same values, in ResNet-18's shapes (small). The reference is fp32 even for bf16
// data: PyTorch in bf16 rounds the batch norm's output and then the sum, and where that sum is
// within rounding of zero the two roundings flip the ReLU's mask for hundreds of elements, which
// moves the parameter gradients by more than a bound could tell from a bug; the fused kernel sums
// in fp32 and rounds once. Bounds as in the test above.
TEST(BatchNormTest, FusedAddReluMatchesPyTorchsOnCudaInBf16AndFp32) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const torch::ScalarType type : {torch::kBFloat16, torch::kFloat}) {
    const bool bf16 = type == torch::kBFloat16;
    for (const std::vector<int64_t> shape :
         {std::vector<int64_t>{8, 64, 56, 56}, {32, 512, 7, 7}}) {
      SCOPED_TRACE(testing::Message() << (bf16 ? "bf16 " : "fp32 ") << c10::IntArrayRef(shape));
      torch::manual_seed(13);
      const torch::Tensor input = LikeAConvolution(shape, type, 4, 3);
      const torch::Tensor residual = LikeAConvolution(shape, type, 1, -0.5);
      const torch::Tensor grad = torch::randn_like(input);
      BatchNorm2d ours(shape[1]);
      torch::nn::BatchNorm2d theirs(shape[1]);
      OnCudaWithTheSameRandomAffine(ours, theirs);
      const auto fp32 = [](const torch::Tensor& t) { return t.to(torch::kFloat).requires_grad_(); };
      const torch::Tensor our_input = input.clone().requires_grad_();
      const torch::Tensor our_residual = residual.clone().requires_grad_();
      const torch::Tensor their_input = fp32(input);
      const torch::Tensor their_residual = fp32(residual);
      const torch::Tensor our_output = ours->ForwardAddRelu(our_input, our_residual);
      const torch::Tensor their_output = torch::relu(theirs->forward(their_input) + their_residual);
      EXPECT_EQ(our_output.scalar_type(), type);
      EXPECT_TRUE(our_output.is_contiguous(torch::MemoryFormat::ChannelsLast));
      EXPECT_LT(MaxDifference(our_output, their_output), bf16 ? 0.05 : 1e-4);
      our_output.backward(grad);
      their_output.backward(grad.to(torch::kFloat));
      const double relative_bound = bf16 ? 0.02 : 1e-3;
      const auto elements_off = [&](const torch::Tensor& ours_, const torch::Tensor& theirs_) {
        const double bound = relative_bound * theirs_.abs().max().item<double>();
        return ((ours_.to(torch::kFloat) - theirs_).abs() > bound).sum().item<int64_t>();
      };
      // An output within rounding of zero may be cut on one side and not the other: a handful.
      const int64_t allowed = 1 + input.numel() / 100000;
      EXPECT_LE(elements_off(our_input.grad(), their_input.grad()), allowed);
      EXPECT_LE(elements_off(our_residual.grad(), their_residual.grad()), allowed);
      EXPECT_GT((our_residual.grad() == 0).sum().item<int64_t>(), 0);  // the ReLU did cut
      const double weight_scale = theirs->weight.grad().abs().max().item<double>();
      EXPECT_LT(MaxDifference(ours->weight.grad(), theirs->weight.grad()), 0.01 * weight_scale);
      const double bias_scale = theirs->bias.grad().abs().max().item<double>();
      EXPECT_LT(MaxDifference(ours->bias.grad(), theirs->bias.grad()), 0.01 * bias_scale);
#ifdef TRAIND_HAVE_CUDA_KERNELS
      // traind's kernels ran, not the unfused path, which would pass the same checks.
      EXPECT_NE(our_output.grad_fn()->name().find("NhwcBatchNormFunction"), std::string::npos)
          << our_output.grad_fn()->name();
#endif
    }
  }
}

// ForwardMaxPool's fused path (the pool in the batch norm's output pass, its backward gathering
// through the picks tile by tile) against the same layers unfused (traind's batch norm with its
// ReLU, then traind's max pool), which it reproduces: it rounds each value to the data's type
// before the window compares it, as the stored activation would be. Then, in fp32, against
// PyTorch's batch norm, relu and max_pool2d with the bounds of the tests above (in bf16 the two
// sides' one-ulp differences decide near-ties in a window differently, which routes whole
// gradients elsewhere; the unfused layers are checked against PyTorch's in bf16 by the tests above
// and MaxPoolTest).
struct PoolCase {
  int64_t kernel, stride, padding;
  bool fused;  // whether the fused path takes it (stride 2, windows up to 4 wide)
};

void ExpectFusedMaxPoolMatchesTheUnfusedLayers(torch::ScalarType type,
                                               const std::vector<int64_t>& shape,
                                               const PoolCase& geometry) {
  const bool bf16 = type == torch::kBFloat16;
  torch::manual_seed(17);
  const torch::Tensor input = LikeAConvolution(shape, type, 4, 3);
  BatchNorm2d fused(shape[1], /*relu=*/true), unfused(shape[1], /*relu=*/true);
  torch::nn::BatchNorm2d theirs(shape[1]);
  OnCudaWithTheSameRandomAffine(fused, theirs);
  unfused->to(torch::kCUDA);
  {
    torch::NoGradGuard no_grad;
    unfused->weight.copy_(fused->weight);
    unfused->bias.copy_(fused->bias);
  }
  MaxPool2d pool(geometry.kernel, geometry.stride, geometry.padding);
  const torch::Tensor fused_input = input.clone().requires_grad_();
  const torch::Tensor unfused_input = input.clone().requires_grad_();
  const torch::Tensor their_input = input.to(torch::kFloat).requires_grad_();
  const torch::Tensor fused_output = fused->ForwardMaxPool(fused_input, *pool);
  const torch::Tensor unfused_output = pool->forward(unfused->forward(unfused_input));
  const torch::Tensor their_output =
      torch::max_pool2d(torch::relu(theirs->forward(their_input)), geometry.kernel, geometry.stride,
                        geometry.padding);
#ifdef TRAIND_HAVE_CUDA_KERNELS
  EXPECT_EQ(
      fused_output.grad_fn()->name().find("NhwcBatchNormReluMaxPoolFunction") != std::string::npos,
      geometry.fused)
      << fused_output.grad_fn()->name();
#endif
  EXPECT_EQ(fused_output.scalar_type(), type);
  EXPECT_TRUE(fused_output.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(fused_output.equal(unfused_output));
  EXPECT_TRUE(fused->running_mean.equal(unfused->running_mean));
  EXPECT_TRUE(fused->running_var.equal(unfused->running_var));
  const torch::Tensor grad = torch::randn_like(fused_output);
  fused_output.backward(grad);
  unfused_output.backward(grad);
  their_output.backward(grad.to(torch::kFloat));
  // The gathered gradient is the pool's bit for bit; the sums add in another order, so the
  // coefficients may differ in fp32's last bits, and a bf16 result by its rounding (1/128).
  const double scale = unfused_input.grad().abs().max().item<double>();
  EXPECT_LE(MaxDifference(fused_input.grad(), unfused_input.grad()),
            (bf16 ? 1.0 / 128 : 1e-5) * scale);
  EXPECT_LT(MaxDifference(fused->weight.grad(), unfused->weight.grad()),
            1e-5 * unfused->weight.grad().abs().max().item<double>());
  EXPECT_LT(MaxDifference(fused->bias.grad(), unfused->bias.grad()),
            1e-5 * unfused->bias.grad().abs().max().item<double>());
  if (bf16) return;
  EXPECT_LT(MaxDifference(fused_output, their_output), 1e-4);
  // An output within rounding of zero, or a near-tie in a window, may go one way on one side
  // and the other way on the other: a handful of elements.
  const double their_scale = their_input.grad().abs().max().item<double>();
  const int64_t off =
      ((fused_input.grad().to(torch::kFloat) - their_input.grad()).abs() > 1e-3 * their_scale)
          .sum()
          .item<int64_t>();
  EXPECT_LE(off, 1 + input.numel() / 100000);
  EXPECT_LT(MaxDifference(fused->weight.grad(), theirs->weight.grad()),
            0.01 * theirs->weight.grad().abs().max().item<double>());
}

// ResNet-18's stem pool (3/2/1) and the other poolings the tiles take (windows 1 to 4 wide,
// with and without padding), on maps of even and odd sizes (windows and tiles cut by the edges);
// and one they do not (stride 1), which takes the separate layers.
TEST(BatchNormTest, FusedMaxPoolMatchesTheUnfusedLayersOnCudaInBf16AndFp32) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const torch::ScalarType type : {torch::kBFloat16, torch::kFloat}) {
    for (const std::vector<int64_t> shape :
         {std::vector<int64_t>{8, 64, 56, 56}, {3, 64, 15, 13}}) {
      for (const PoolCase geometry :
           {PoolCase{3, 2, 1, true}, PoolCase{3, 2, 0, true}, PoolCase{2, 2, 0, true},
            PoolCase{4, 2, 2, true}, PoolCase{4, 2, 1, true}, PoolCase{4, 2, 0, true},
            PoolCase{2, 2, 1, true}, PoolCase{1, 2, 0, true}, PoolCase{3, 1, 1, false}}) {
        SCOPED_TRACE(testing::Message() << (type == torch::kBFloat16 ? "bf16 " : "fp32 ")
                                        << c10::IntArrayRef(shape) << " pool " << geometry.kernel
                                        << "/" << geometry.stride << "/" << geometry.padding);
        ExpectFusedMaxPoolMatchesTheUnfusedLayers(type, shape, geometry);
      }
    }
  }
}

// On the fused path, an output that feeds two layers comes as two tensors over the same data
// whose gradients the batch norm's backward adds as it loads them: the same bits as one output
// given the sum of the two (autograd's addition, rounded to the data's type), for a residual
// block's end and for the pooled stem, and with one of the twins unused.
struct TwinCaseSide {
  BatchNorm2d norm;
  torch::Tensor input, residual;
};

void ExpectTheSameGradients(const TwinCaseSide& a, const TwinCaseSide& b, bool pooled) {
  EXPECT_TRUE(a.input.grad().equal(b.input.grad()));
  EXPECT_TRUE(a.norm->weight.grad().equal(b.norm->weight.grad()));
  EXPECT_TRUE(a.norm->bias.grad().equal(b.norm->bias.grad()));
  if (!pooled) EXPECT_TRUE(a.residual.grad().equal(b.residual.grad()));
}

void ExpectTwinBackwardMatchesOneOutputWithTheSum(torch::ScalarType type, bool pooled) {
  torch::manual_seed(21);
  const std::vector<int64_t> shape{4, 64, 28, 28};
  const torch::Tensor input = LikeAConvolution(shape, type, 4, 3);
  const torch::Tensor residual = LikeAConvolution(shape, type, 1, 0);
  MaxPool2d pool(/*kernel=*/3, /*stride=*/2, /*padding=*/1);
  // Twins given both gradients, the main one only and the shortcut's only, then one output for
  // each: given the sum, the first and the second.
  std::vector<TwinCaseSide> sides;
  for (int i = 0; i < 6; ++i) {
    sides.push_back({BatchNorm2d(shape[1], /*relu=*/pooled), input.clone().requires_grad_(),
                     residual.clone().requires_grad_()});
    sides.back().norm->to(torch::kCUDA);
  }
  const auto twins = [&](TwinCaseSide& side) {
    return pooled ? side.norm->ForwardMaxPoolTwin(side.input, *pool)
                  : side.norm->ForwardAddReluTwin(side.input, side.residual);
  };
  const auto one = [&](TwinCaseSide& side) {
    return pooled ? side.norm->ForwardMaxPool(side.input, *pool)
                  : side.norm->ForwardAddRelu(side.input, side.residual);
  };
  const TwinActivation both = twins(sides[0]), main_only = twins(sides[1]),
                       shortcut_only = twins(sides[2]);
  const torch::Tensor for_both = one(sides[3]), for_first = one(sides[4]),
                      for_second = one(sides[5]);
  EXPECT_EQ(both.main.data_ptr(), both.shortcut.data_ptr());
  EXPECT_TRUE(both.shortcut.equal(for_both));
#ifdef TRAIND_HAVE_CUDA_KERNELS
  if (UsesFusedBatchNorm(input)) EXPECT_FALSE(both.main.is_same(both.shortcut));
#endif
  const torch::Tensor g1 = torch::randn_like(for_both), g2 = torch::randn_like(for_both);
  torch::autograd::backward({both.main, both.shortcut}, {g1, g2});
  main_only.main.backward(g1);
  shortcut_only.shortcut.backward(g2);
  for_both.backward(g1 + g2);
  for_first.backward(g1);
  for_second.backward(g2);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i == 0 ? "both" : i == 1 ? "the main one only" : "the shortcut's only");
    ExpectTheSameGradients(sides[i], sides[i + 3], pooled);
  }
}

TEST(BatchNormTest, TwinGradientsAreAddedInTheBackwardBitForBitOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const torch::ScalarType type : {torch::kBFloat16, torch::kFloat}) {
    for (const bool pooled : {false, true}) {
      SCOPED_TRACE(testing::Message() << c10::toString(type) << (pooled ? " pooled" : " added"));
      ExpectTwinBackwardMatchesOneOutputWithTheSum(type, pooled);
    }
  }
}

// A NaN in the input makes its channel's statistics NaN: the fused ReLU passes them on, as
// torch.relu does, so that a diverged activation reaches the loss (max(NaN, 0) would say 0).
TEST(BatchNormTest, FusedReluKeepsNaNOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const torch::ScalarType type : {torch::kBFloat16, torch::kFloat}) {
    torch::Tensor input = torch::randn({4, 16, 5, 5}, torch::TensorOptions().device(torch::kCUDA));
    input[0][3][2][2] = std::numeric_limits<float>::quiet_NaN();
    input = input.to(type).contiguous(torch::MemoryFormat::ChannelsLast);
    BatchNorm2d ours(16, /*relu=*/true);
    ours->to(torch::kCUDA);
    const torch::Tensor output = ours->forward(input).to(torch::kFloat);
    EXPECT_TRUE(output.select(1, 3).isnan().all().item<bool>()) << c10::toString(type);
    EXPECT_FALSE(output.select(1, 4).isnan().any().item<bool>()) << c10::toString(type);

    // With a residual added: the NaN reaches the output, and its backward passes the gradient
    // where the output is NaN, as torch.relu's does (it cuts only where the output is <= 0).
    BatchNorm2d adds(16);
    adds->to(torch::kCUDA);
    const torch::Tensor residual = torch::zeros_like(input).requires_grad_();
    const torch::Tensor sum = adds->ForwardAddRelu(input, residual);
    EXPECT_TRUE(sum.select(1, 3).isnan().all().item<bool>()) << c10::toString(type);
    sum.backward(torch::ones_like(sum));
    EXPECT_TRUE((residual.grad().select(1, 3) == 1).all().item<bool>()) << c10::toString(type);
  }
}

}  // namespace
}  // namespace traind
