// AdamStateOf / SetAdamSteps, which a CUDA-graph step uses to update (and checkpoint) the
// optimizer's own state: checked here on the CPU. And CreateFusedAdam's one-pass CPU update
// against LibTorch's Adam and AdamW.
#include "engine/optimizer_factory.h"

#include "gtest/gtest.h"
#include "models/own_kernels.h"

namespace traind {
namespace {

TEST(OptimizerFactoryTest, AdamStateOfGivesTheOptimizersOwnTensorsAndStepsCanBeSet) {
  for (const bool decoupled : {false, true}) {
    torch::manual_seed(1);
    torch::nn::Linear layer(4, 2);
    std::vector<torch::Tensor> params = layer->parameters();
    std::unique_ptr<torch::optim::Optimizer> optimizer =
        CreateFusedAdam(params, 1e-2, 0, decoupled);

    // Before any step: created zeroed, step 0.
    absl::StatusOr<AdamStateTensors> fresh = AdamStateOf(*optimizer, params);
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    ASSERT_EQ(fresh->exp_avgs.size(), params.size());
    for (int64_t step : fresh->steps) EXPECT_EQ(step, 0);
    for (const torch::Tensor& m : fresh->exp_avgs) EXPECT_EQ(m.abs().sum().item<double>(), 0);

    layer->forward(torch::ones({3, 4})).sum().backward();
    optimizer->step();
    absl::StatusOr<AdamStateTensors> stepped = AdamStateOf(*optimizer, params);
    ASSERT_TRUE(stepped.ok());
    for (int64_t step : stepped->steps) EXPECT_EQ(step, 1) << "decoupled " << decoupled;
    // The optimizer updated the very tensors handed out before its step.
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_TRUE(fresh->exp_avgs[i].is_same(stepped->exp_avgs[i]));
      EXPECT_GT(stepped->exp_avgs[i].abs().sum().item<double>(), 0);
    }

    ASSERT_TRUE(SetAdamSteps(*optimizer, params, std::vector<int64_t>(params.size(), 7)).ok());
    absl::StatusOr<AdamStateTensors> set = AdamStateOf(*optimizer, params);
    ASSERT_TRUE(set.ok());
    for (int64_t step : set->steps) EXPECT_EQ(step, 7);
    EXPECT_EQ(SetAdamSteps(*optimizer, params, {1}).code(), absl::StatusCode::kInvalidArgument);
  }
  torch::nn::Linear other(2, 2);
  torch::optim::SGD sgd(other->parameters(), torch::optim::SGDOptions(0.1));
  EXPECT_EQ(AdamStateOf(sgd, other->parameters()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Two identical networks, one stepped by CreateFusedAdam (on the CPU: engine/cpu/adam_step.h),
// one by LibTorch's own optimizer, on the same batches: same weights, moments and step counts
// to fp32 rounding, with weight decay coupled (Adam) and decoupled (AdamW), a parameter without a
// gradient in one step, and a gradient that is not contiguous.
TEST(OptimizerFactoryTest, CpuAdamStepsLikeLibTorchsAdam) {
  ASSERT_TRUE(OwnCpuKernelsEnabled());  // else this compares LibTorch's Adam with itself
  for (const bool decoupled : {false, true}) {
    SCOPED_TRACE(decoupled ? "AdamW" : "Adam");
    torch::manual_seed(4);
    torch::nn::Sequential ours(torch::nn::Linear(16, 8), torch::nn::Tanh(),
                               torch::nn::Linear(8, 3));
    torch::nn::Sequential theirs(torch::nn::Linear(16, 8), torch::nn::Tanh(),
                                 torch::nn::Linear(8, 3));
    {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < ours->parameters().size(); ++i) {
        theirs->parameters()[i].copy_(ours->parameters()[i]);
      }
    }
    const double lr = 3e-2, weight_decay = 0.1;
    std::unique_ptr<torch::optim::Optimizer> fused =
        CreateFusedAdam(ours->parameters(), lr, weight_decay, decoupled);
    std::unique_ptr<torch::optim::Optimizer> plain;
    if (decoupled) {
      plain = std::make_unique<torch::optim::AdamW>(
          theirs->parameters(), torch::optim::AdamWOptions(lr).weight_decay(weight_decay));
    } else {
      plain = std::make_unique<torch::optim::Adam>(
          theirs->parameters(), torch::optim::AdamOptions(lr).weight_decay(weight_decay));
    }
    for (int step = 0; step < 6; ++step) {
      const torch::Tensor x = torch::randn({5, 16});
      for (auto* net : {&ours, &theirs}) (*net)->forward(x).pow(2).sum().backward();
      if (step == 2) {  // the last bias has no gradient in this step: skipped, step count too
        ours->parameters().back().mutable_grad().reset();
        theirs->parameters().back().mutable_grad().reset();
      }
      if (step == 3) {  // a transposed (not contiguous) gradient, as some backward ops leave
        for (auto* net : {&ours, &theirs}) {
          torch::Tensor& grad = (*net)->parameters()[0].mutable_grad();
          grad = torch::empty_strided(grad.sizes(), {1, grad.size(0)}).copy_(grad);
        }
      }
      fused->step();
      plain->step();
      fused->zero_grad();
      plain->zero_grad();
    }
    const absl::StatusOr<AdamStateTensors> a = AdamStateOf(*fused, ours->parameters());
    const absl::StatusOr<AdamStateTensors> b = AdamStateOf(*plain, theirs->parameters());
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->steps, b->steps);
    EXPECT_EQ(a->steps.back(), 5);
    for (size_t i = 0; i < ours->parameters().size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_TRUE(torch::allclose(ours->parameters()[i], theirs->parameters()[i], 1e-5, 1e-6));
      EXPECT_TRUE(torch::allclose(a->exp_avgs[i], b->exp_avgs[i], 1e-5, 1e-7));
      EXPECT_TRUE(torch::allclose(a->exp_avg_sqs[i], b->exp_avg_sqs[i], 1e-5, 1e-9));
      // The weights moved: the comparison is not of two untouched networks.
      EXPECT_GT(a->exp_avg_sqs[i].abs().sum().item<double>(), 0);
    }
  }
}

}  // namespace
}  // namespace traind
