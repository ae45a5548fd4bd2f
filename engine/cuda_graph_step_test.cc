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

// A conv and a linear layer with a batch norm between: what autocast casts (the conv's and the
// linear's weights and biases, the conv's in channels_last) and what it does not (batch norm's).
struct TinyConvNetImpl : torch::nn::Module {
  TinyConvNetImpl() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 8, 3).padding(1)));
    norm = register_module("norm", torch::nn::BatchNorm2d(8));
    head = register_module("head", torch::nn::Linear(8 * 4 * 4, 4));
  }
  torch::Tensor forward(torch::Tensor x) {
    return head(torch::relu(norm(conv(x))).flatten(1));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d norm{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(TinyConvNet);

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

// bf16 weight copies: the graph's forward and backward read bf16 copies of the conv and linear
// weights, and one kernel updates the fp32 weights, the moments and the copies. The same job
// trained eagerly under autocast (ATen's casts, ATen's fused Adam) must end with the same fp32
// weights and moments, with Adam and with AdamW's decoupled decay, clipping every step.
TEST(CudaGraphStepTest, Bf16WeightCopiesTrainLikeAutocastsCasts) {
  if (!torch::cuda::is_available() || !CudaGraphTrainStep::Available()) {
    GTEST_SKIP() << "no CUDA device, or this LibTorch cannot capture CUDA graphs";
  }
  const torch::Device device("cuda:0");
  torch::manual_seed(5);
  // Two input channels, so a channels_last conv weight is laid out differently from a contiguous
  // one and the update kernel walks real strides.
  const torch::Tensor images = torch::randn({8, 2, 4, 4}, torch::TensorOptions().device(device));
  const torch::Tensor labels =
      torch::randint(0, 4, {8}, torch::TensorOptions().dtype(torch::kLong).device(device));
  auto make = [&] {
    torch::manual_seed(11);
    TinyConvNet net;
    net->to(device);
    net->conv->weight.set_data(
        net->conv->weight.detach().contiguous(torch::MemoryFormat::ChannelsLast));
    return torch::nn::AnyModule(net);
  };
  for (const std::string optimizer : {"adam", "adamw"}) {
    SCOPED_TRACE(optimizer);
    trainer::v1::JobSpec spec;
    spec.set_optimizer(optimizer);
    spec.set_amp("bf16");
    spec.set_learning_rate(1e-2);
    spec.set_weight_decay(optimizer == "adamw" ? 0.1 : 1e-3);
    spec.set_clip_grad_norm(0.05);  // small enough to clip every step
    const bool decoupled = optimizer == "adamw";

    torch::nn::AnyModule eager_model = make();
    std::unique_ptr<torch::optim::Optimizer> eager_optimizer = CreateFusedAdam(
        eager_model.ptr()->parameters(), 1e-2, spec.weight_decay(), decoupled);
    TrainStep eager(eager_model, eager_optimizer.get(), device, "bf16", 1, Augmentation{}, 1,
                    LossKind::kCrossEntropy, 0.0, spec.clip_grad_norm());

    torch::nn::AnyModule copies_model = make();
    std::unique_ptr<torch::optim::Optimizer> copies_optimizer = CreateFusedAdam(
        copies_model.ptr()->parameters(), 1e-2, spec.weight_decay(), decoupled);
    absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> copies = CudaGraphTrainStep::Create(
        copies_model, *copies_optimizer, spec, device, 8, images[0], labels[0],
        /*bf16_weight_copies=*/true);
    ASSERT_TRUE(copies.ok()) << copies.status();
    // conv weight and bias, linear weight and bias; not batch norm's two.
    EXPECT_EQ((*copies)->bf16_copied_tensors(), 4);
    EXPECT_EQ((*copies)->bf16_copied_elements(), 8 * 2 * 9 + 8 + 4 * 128 + 4);
    for (const torch::Tensor& p : copies_model.ptr()->parameters()) {
      EXPECT_EQ(p.scalar_type(), torch::kFloat32) << "the model keeps its fp32 weights";
    }
    const torch::Tensor conv_weight = copies_model.ptr()->named_parameters()["conv.weight"];
    EXPECT_TRUE(conv_weight.is_contiguous(torch::MemoryFormat::ChannelsLast));
    EXPECT_FALSE(conv_weight.is_contiguous());
    ASSERT_TRUE(AllClose(Snapshot(eager_model), Snapshot(copies_model)))
        << "capture's warm-up steps must be undone";

    torch::nn::AnyModule plain_model = make();
    std::unique_ptr<torch::optim::Optimizer> plain_optimizer = CreateFusedAdam(
        plain_model.ptr()->parameters(), 1e-2, spec.weight_decay(), decoupled);
    absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> plain = CudaGraphTrainStep::Create(
        plain_model, *plain_optimizer, spec, device, 8, images[0], labels[0],
        /*bf16_weight_copies=*/false);
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_EQ((*plain)->bf16_copied_tensors(), 0);

    for (int i = 0; i < 4; ++i) {
      const std::vector<torch::Tensor> before = Snapshot(copies_model);
      eager.Run(images, labels);
      (*copies)->Run(images, labels);
      (*plain)->Run(images, labels);
      torch::cuda::synchronize();
      EXPECT_TRUE(AllClose(Snapshot(eager_model), Snapshot(copies_model))) << "step " << i;
      EXPECT_TRUE(AllClose(Snapshot(eager_model), Snapshot(plain_model))) << "step " << i;
      EXPECT_FALSE(AllClose(before, Snapshot(copies_model))) << "step " << i << " did not train";
    }
    ASSERT_TRUE((*copies)->SyncOptimizer().ok());
    absl::StatusOr<AdamStateTensors> state =
        AdamStateOf(*copies_optimizer, copies_model.ptr()->parameters());
    absl::StatusOr<AdamStateTensors> eager_state =
        AdamStateOf(*eager_optimizer, eager_model.ptr()->parameters());
    ASSERT_TRUE(state.ok() && eager_state.ok());
    for (int64_t count : state->steps) EXPECT_EQ(count, 4);
    EXPECT_TRUE(AllClose(state->exp_avgs, eager_state->exp_avgs));
    EXPECT_TRUE(AllClose(state->exp_avg_sqs, eager_state->exp_avg_sqs));
  }
}

// A model of linear layers only: every parameter has a copy and none is left to ATen's fused
// kernel (nor to its clipping norms), which must still capture and train like the eager step.
TEST(CudaGraphStepTest, Bf16WeightCopiesOfEveryParameterClipAndTrain) {
  if (!torch::cuda::is_available() || !CudaGraphTrainStep::Available()) {
    GTEST_SKIP() << "no CUDA device, or this LibTorch cannot capture CUDA graphs";
  }
  const torch::Device device("cuda:0");
  trainer::v1::JobSpec spec;
  spec.set_optimizer("adam");
  spec.set_amp("bf16");
  spec.set_learning_rate(1e-2);
  spec.set_clip_grad_norm(0.05);
  torch::manual_seed(3);
  const torch::Tensor images = torch::randn({8, 1, 4, 4}, torch::TensorOptions().device(device));
  const torch::Tensor labels =
      torch::randint(0, 4, {8}, torch::TensorOptions().dtype(torch::kLong).device(device));
  torch::nn::AnyModule eager_model = MakeModel(device);
  std::unique_ptr<torch::optim::Optimizer> eager_optimizer =
      CreateFusedAdam(eager_model.ptr()->parameters(), 1e-2, 0, /*decoupled=*/false);
  TrainStep eager(eager_model, eager_optimizer.get(), device, "bf16", 1, Augmentation{}, 1,
                  LossKind::kCrossEntropy, 0.0, spec.clip_grad_norm());
  torch::nn::AnyModule graph_model = MakeModel(device);
  std::unique_ptr<torch::optim::Optimizer> graph_optimizer =
      CreateFusedAdam(graph_model.ptr()->parameters(), 1e-2, 0, /*decoupled=*/false);
  absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> graph = CudaGraphTrainStep::Create(
      graph_model, *graph_optimizer, spec, device, 8, images[0], labels[0]);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ((*graph)->bf16_copied_tensors(), 4);  // both layers' weights and biases
  for (int i = 0; i < 3; ++i) {
    eager.Run(images, labels);
    (*graph)->Run(images, labels);
    torch::cuda::synchronize();
    EXPECT_TRUE(AllClose(Snapshot(eager_model), Snapshot(graph_model))) << "step " << i;
  }
}

}  // namespace
}  // namespace traind
