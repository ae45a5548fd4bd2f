// TrainStep over shard threads (engine/train_step.h): the same step as the whole batch's, up to
// rounding, and the same on every run.
#include "engine/train_step.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/job_spec.h"
#include "engine/optimizer_factory.h"
#include "engine/shard_threads.h"
#include "models/model_factory.h"

namespace traind {
namespace {

using trainer::v1::JobSpec;

struct Trained {
  std::vector<torch::Tensor> parameters;
  std::vector<double> losses;
};

// LeNet5 (traind's own CPU kernels included) trained for `steps` steps of `optimizer` with label
// smoothing, on `shards` shard threads (1: none), `accumulate` micro-batches a step. Adam (and
// clipping) would hide a gradient off by a constant factor; plain SGD shows it.
Trained Train(int shards, int steps, int accumulate = 1, const std::string& amp = "",
              const std::string& optimizer_name = "sgd") {
  JobSpec spec;
  spec.set_model("lenet5");
  spec.set_dataset("fake");
  ApplyDefaults(&spec);
  spec.set_optimizer(optimizer_name);
  spec.set_learning_rate(optimizer_name == "sgd" ? 0.05 : 3e-3);
  torch::manual_seed(11);
  torch::nn::AnyModule model = *CreateModel(spec, ModelInput{1, 32, 32, 10});
  auto optimizer = *CreateOptimizer(spec, model.ptr()->parameters());
  ShardThreads threads(shards);
  TrainStep step(model, optimizer.get(), torch::kCPU, amp, accumulate, Augmentation{}, 1,
                 LossKind::kCrossEntropy, /*label_smoothing=*/0.1,
                 /*clip_grad_norm=*/optimizer_name == "sgd" ? 0.0 : 1.0);
  step.set_shard_threads(&threads);
  torch::Generator data = at::detail::createCPUGenerator(3);
  Trained trained;
  for (int i = 0; i < steps * accumulate; ++i) {
    // 61 images: shards of unequal size (30 and 31, or 20, 20 and 21).
    torch::Tensor images = torch::randn({61, 1, 32, 32}, data);
    torch::Tensor labels = torch::randint(10, {61}, data);
    trained.losses.push_back(step.Run(images, labels).item<double>());
  }
  for (const torch::Tensor& p : model.ptr()->parameters()) trained.parameters.push_back(p.clone());
  return trained;
}

TEST(TrainStepShardsTest, ShardsTrainLikeTheWholeBatch) {
  for (const std::string optimizer : {"sgd", "adam"}) {
    const Trained whole = Train(1, 8, 1, "", optimizer);
    for (int shards : {2, 3}) {
      const Trained sharded = Train(shards, 8, 1, "", optimizer);
      ASSERT_EQ(sharded.parameters.size(), whole.parameters.size());
      for (size_t i = 0; i < whole.parameters.size(); ++i) {
        EXPECT_TRUE(torch::allclose(sharded.parameters[i], whole.parameters[i], 1e-4, 1e-5))
            << optimizer << ", " << shards << " shards, parameter " << i << ": largest difference "
            << (sharded.parameters[i] - whole.parameters[i]).abs().max().item<double>();
      }
      for (size_t i = 0; i < whole.losses.size(); ++i) {
        EXPECT_NEAR(sharded.losses[i], whole.losses[i], 1e-4 * whole.losses[i]) << "step " << i;
      }
    }
  }
}

// Gradients are added in shard order, never in the order the threads finish: bit for bit.
TEST(TrainStepShardsTest, ShardedRunsAreReproducible) {
  const Trained first = Train(2, 6);
  const Trained second = Train(2, 6);
  for (size_t i = 0; i < first.parameters.size(); ++i) {
    EXPECT_TRUE(torch::equal(first.parameters[i], second.parameters[i])) << "parameter " << i;
  }
  EXPECT_EQ(first.losses, second.losses);
}

TEST(TrainStepShardsTest, AccumulationAndBf16AutocastWorkInShards) {
  const Trained whole = Train(1, 3, /*accumulate=*/2);
  const Trained sharded = Train(2, 3, /*accumulate=*/2);
  for (size_t i = 0; i < whole.parameters.size(); ++i) {
    EXPECT_TRUE(torch::allclose(sharded.parameters[i], whole.parameters[i], 1e-4, 1e-5))
        << "parameter " << i;
  }
  // Autocast's state is per thread: each shard sets its own, so bf16 trains there too (it
  // memorises one batch, as ZooTest.Bf16AutocastOnCpuTrains does without shards).
  JobSpec spec;
  spec.set_model("lenet5");
  spec.set_dataset("fake");
  ApplyDefaults(&spec);
  torch::manual_seed(1);
  torch::nn::AnyModule model = *CreateModel(spec, ModelInput{1, 32, 32, 10});
  auto optimizer = *CreateOptimizer(spec, model.ptr()->parameters());
  ShardThreads threads(2);
  TrainStep step(model, optimizer.get(), torch::kCPU, "bf16", 1, Augmentation{}, 1);
  step.set_shard_threads(&threads);
  const torch::Tensor images = torch::randn({32, 1, 32, 32});
  const torch::Tensor labels = torch::randint(10, {32});
  const double first = step.Run(images, labels).item<double>();
  double last = first;
  for (int i = 0; i < 30; ++i) last = step.Run(images, labels).item<double>();
  EXPECT_LT(last, first * 0.5);
  EXPECT_EQ(model.ptr()->parameters()[0].scalar_type(), torch::kFloat32);
}

// A module that notes, per call, the thread it ran on and whether autocast was on there.
struct RecordingImpl : torch::nn::Module {
  RecordingImpl() : linear(register_module("linear", torch::nn::Linear(8, 3))) {}
  torch::Tensor forward(torch::Tensor x) {
    {
      std::lock_guard<std::mutex> lock(mu);
      threads.insert(std::this_thread::get_id());
      autocast_on.push_back(at::autocast::is_cpu_enabled());
    }
    return linear->forward(x);
  }
  torch::nn::Linear linear;
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::vector<bool> autocast_on;
};
TORCH_MODULE(Recording);

TEST(TrainStepShardsTest, EachShardRunsOnItsOwnThreadUnderAutocast) {
  Recording model;
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  ShardThreads threads(2);
  TrainStep step(torch::nn::AnyModule(model), &optimizer, torch::kCPU, "bf16", 1, Augmentation{},
                 1);
  step.set_shard_threads(&threads);
  const torch::Tensor before = model->linear->weight.detach().clone();
  step.Run(torch::randn({16, 8}), torch::randint(3, {16}));
  EXPECT_EQ(model->threads.size(), 2u);  // two shards, two threads
  EXPECT_EQ(model->autocast_on, std::vector<bool>({true, true}));
  // The step was applied. (Not "the gradient is defined": after the step zero_grad() zeroes it in
  // LibTorch 1.13 but sets it to none in 2.x.)
  EXPECT_FALSE(torch::equal(model->linear->weight.detach(), before));
}

}  // namespace
}  // namespace traind
