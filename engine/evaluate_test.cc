#include "engine/evaluate.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/job_spec.h"
#include "engine/shard_threads.h"
#include "models/model_factory.h"

namespace traind {
namespace {

// Shard threads share the split's evaluation batches: the same batches, so the same predictions;
// the loss summed in another order. 1,000 images in batches of 64: 16 batches, the last partial.
TEST(EvaluateTest, ShardsGiveTheWholeSplitsResult) {
  trainer::v1::JobSpec spec;
  spec.set_model("lenet5");
  spec.set_dataset("fake");
  ApplyDefaults(&spec);
  torch::manual_seed(2);
  torch::nn::AnyModule model = *CreateModel(spec, ModelInput{1, 32, 32, 10});
  Split split;
  split.inputs = torch::randn({1000, 1, 32, 32});
  split.labels = torch::randint(10, {1000});
  const Evaluation whole = Evaluate(model, split, torch::kCPU, "", 64, LossKind::kCrossEntropy, 10);
  EXPECT_GT(whole.accuracy, 0);
  for (int count : {2, 3}) {
    ShardThreads shards(count);
    const Evaluation sharded =
        Evaluate(model, split, torch::kCPU, "", 64, LossKind::kCrossEntropy, 10, false, &shards);
    EXPECT_EQ(sharded.accuracy, whole.accuracy) << count << " shards";
    EXPECT_NEAR(sharded.loss, whole.loss, 1e-6 * whole.loss) << count << " shards";
  }
  EXPECT_TRUE(model.ptr()->is_training());  // put back in training mode

  // 100 images are two batches of 64: with three shards the first has none.
  Split small;
  small.inputs = split.inputs.slice(0, 0, 100);
  small.labels = split.labels.slice(0, 0, 100);
  const Evaluation small_whole =
      Evaluate(model, small, torch::kCPU, "", 64, LossKind::kCrossEntropy, 10);
  ShardThreads three(3);
  const Evaluation small_sharded =
      Evaluate(model, small, torch::kCPU, "", 64, LossKind::kCrossEntropy, 10, false, &three);
  EXPECT_EQ(small_sharded.accuracy, small_whole.accuracy);
  EXPECT_NEAR(small_sharded.loss, small_whole.loss, 1e-6 * small_whole.loss);
}

}  // namespace
}  // namespace traind
