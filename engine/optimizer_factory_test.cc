// AdamStateOf / SetAdamSteps, which a CUDA-graph step uses to update (and checkpoint) the
// optimizer's own state: checked here on the CPU, where the optimizer is LibTorch's Adam.
#include "engine/optimizer_factory.h"

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace traind
