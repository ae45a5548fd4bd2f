// The captured step against the eager one (TrainStep + the fused Adam) on the same weights and
// batches: a schedule's learning rate, label smoothing and gradient clipping must reach the
// graph. Runs only where there is a CUDA device and this LibTorch can capture graphs.
#include "engine/cuda_graph_step.h"

#include <vector>

#include "engine/optimizer_factory.h"
#include "engine/train_step.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

struct TinyNetImpl : torch::nn::Module {
  TinyNetImpl() {
    first = register_module("first", torch::nn::Linear(16, 32));
    second = register_module("second", torch::nn::Linear(32, 4));
  }
  torch::Tensor forward(torch::Tensor x) { return second(torch::relu(first(x.flatten(1)))); }
  torch::nn::Linear first{nullptr}, second{nullptr};
};
TORCH_MODULE(TinyNet);

torch::nn::AnyModule MakeModel(const torch::Device& device) {
  torch::manual_seed(7);  // both copies start from the same weights
  TinyNet net;
  net->to(device);
  return torch::nn::AnyModule(net);
}

std::vector<torch::Tensor> Snapshot(torch::nn::AnyModule& model) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& p : model.ptr()->parameters()) out.push_back(p.detach().clone());
  return out;
}

bool AllClose(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::allclose(a[i], b[i], /*rtol=*/1e-4, /*atol=*/1e-6)) return false;
  }
  return true;
}

TEST(CudaGraphStepTest, MatchesTheEagerStepUnderAScheduleWithSmoothingAndClipping) {
  if (!torch::cuda::is_available() || !CudaGraphTrainStep::Available()) {
    GTEST_SKIP() << "no CUDA device, or this LibTorch cannot capture CUDA graphs";
  }
  const torch::Device device("cuda:0");
  trainer::v1::JobSpec spec;
  spec.set_optimizer("adam");
  spec.set_learning_rate(1e-2);
  spec.set_label_smoothing(0.1);
  spec.set_clip_grad_norm(0.05);  // small enough to clip every step
  torch::manual_seed(3);
  const torch::Tensor images = torch::randn({8, 1, 4, 4}, torch::TensorOptions().device(device));
  const torch::Tensor labels =
      torch::randint(0, 4, {8}, torch::TensorOptions().dtype(torch::kLong).device(device));
  const std::vector<double> rates = {1e-2, 0.0, 5e-3};  // 0: the step must change nothing

  torch::nn::AnyModule eager_model = MakeModel(device);
  std::unique_ptr<torch::optim::Optimizer> eager_optimizer =
      CreateFusedAdam(eager_model.ptr()->parameters(), 1e-2, 0, /*decoupled=*/false);
  TrainStep eager(eager_model, eager_optimizer.get(), device, "", 1, Augmentation{}, 1,
                  LossKind::kCrossEntropy, spec.label_smoothing(), spec.clip_grad_norm());

  torch::nn::AnyModule graph_model = MakeModel(device);
  ASSERT_TRUE(AllClose(Snapshot(eager_model), Snapshot(graph_model)));
  std::unique_ptr<torch::optim::Optimizer> graph_optimizer =
      CreateFusedAdam(graph_model.ptr()->parameters(), 1e-2, 0, /*decoupled=*/false);
  absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> graph = CudaGraphTrainStep::Create(
      graph_model, *graph_optimizer, spec, device, 8, images[0], labels[0]);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_TRUE(AllClose(Snapshot(eager_model), Snapshot(graph_model)))
      << "capture's warm-up steps must be undone";

  for (size_t i = 0; i < rates.size(); ++i) {
    for (torch::optim::OptimizerParamGroup& group : eager_optimizer->param_groups()) {
      group.options().set_lr(rates[i]);
    }
    eager.Run(images, labels);
    const std::vector<torch::Tensor> before = Snapshot(graph_model);
    (*graph)->SetLearningRate(rates[i]);
    (*graph)->Run(images, labels);
    torch::cuda::synchronize();
    EXPECT_TRUE(AllClose(Snapshot(eager_model), Snapshot(graph_model))) << "after step " << i;
    if (rates[i] == 0) {
      EXPECT_TRUE(AllClose(before, Snapshot(graph_model))) << "learning rate 0 moved the weights";
    } else {
      EXPECT_FALSE(AllClose(before, Snapshot(graph_model))) << "step " << i << " did not train";
    }
  }
  // The step counts the graph kept on the device reach the optimizer's state (checkpoints).
  ASSERT_TRUE((*graph)->SyncOptimizer().ok());
  absl::StatusOr<AdamStateTensors> state =
      AdamStateOf(*graph_optimizer, graph_model.ptr()->parameters());
  ASSERT_TRUE(state.ok()) << state.status();
  for (int64_t count : state->steps) EXPECT_EQ(count, 3);
  absl::StatusOr<AdamStateTensors> eager_state =
      AdamStateOf(*eager_optimizer, eager_model.ptr()->parameters());
  ASSERT_TRUE(eager_state.ok());
  EXPECT_TRUE(AllClose(state->exp_avgs, eager_state->exp_avgs));
  EXPECT_TRUE(AllClose(state->exp_avg_sqs, eager_state->exp_avg_sqs));
}

}  // namespace
}  // namespace traind
