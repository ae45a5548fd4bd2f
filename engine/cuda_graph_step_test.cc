// The captured step against the eager one (TrainStep + the fused Adam) on the same weights and
// batches: a schedule's learning rate, label smoothing and gradient clipping must reach the
// graph. Runs only where there is a CUDA device and this LibTorch can capture graphs.
#include "engine/cuda_graph_step.h"

#include <memory>
#include <string>
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
  torch::Tensor forward(torch::Tensor x) { return head(torch::relu(norm(conv(x))).flatten(1)); }
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

// One copy of a model with the fused Adam or AdamW `spec` asks for.
struct Trainee {
  Trainee(torch::nn::AnyModule m, const trainer::v1::JobSpec& spec)
      : model(std::move(m)),
        optimizer(CreateFusedAdam(model.ptr()->parameters(), spec.learning_rate(),
                                  spec.weight_decay(), spec.optimizer() == "adamw")) {}
  torch::nn::AnyModule model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
};

struct Batch {
  torch::Tensor images, labels;
};

Batch RandomBatch(const torch::Device& device, int64_t channels) {
  torch::manual_seed(3);
  return {torch::randn({8, channels, 4, 4}, torch::TensorOptions().device(device)),
          torch::randint(0, 4, {8}, torch::TensorOptions().dtype(torch::kLong).device(device))};
}

// The eager step (autocast as `spec` says, LibTorch's clipping) that the graph must match.
std::unique_ptr<TrainStep> EagerStep(Trainee& t, const trainer::v1::JobSpec& spec,
                                     const torch::Device& device) {
  return std::make_unique<TrainStep>(t.model, t.optimizer.get(), device, spec.amp(), 1,
                                     Augmentation{}, 1, LossKind::kCrossEntropy,
                                     spec.label_smoothing(), spec.clip_grad_norm());
}

absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> Capture(Trainee& t,
                                                            const trainer::v1::JobSpec& spec,
                                                            const torch::Device& device,
                                                            const Batch& batch,
                                                            bool bf16_weight_copies = true) {
  return CudaGraphTrainStep::Create(t.model, *t.optimizer, spec, device, 8, batch.images[0],
                                    batch.labels[0], bf16_weight_copies);
}

// After `graph` wrote its step counts back: the same counts and moments as the eager copy's.
void ExpectSameAdamState(CudaGraphTrainStep& graph, Trainee& graphed, Trainee& eager,
                         int64_t steps) {
  ASSERT_TRUE(graph.SyncOptimizer().ok());
  absl::StatusOr<AdamStateTensors> state =
      AdamStateOf(*graphed.optimizer, graphed.model.ptr()->parameters());
  absl::StatusOr<AdamStateTensors> eager_state =
      AdamStateOf(*eager.optimizer, eager.model.ptr()->parameters());
  ASSERT_TRUE(state.ok() && eager_state.ok());
  for (int64_t count : state->steps) EXPECT_EQ(count, steps);
  EXPECT_TRUE(AllClose(state->exp_avgs, eager_state->exp_avgs));
  EXPECT_TRUE(AllClose(state->exp_avg_sqs, eager_state->exp_avg_sqs));
}

bool CannotCapture() { return !torch::cuda::is_available() || !CudaGraphTrainStep::Available(); }

TEST(CudaGraphStepTest, MatchesTheEagerStepUnderAScheduleWithSmoothingAndClipping) {
  if (CannotCapture()) GTEST_SKIP() << "no CUDA device, or this LibTorch cannot capture graphs";
  const torch::Device device("cuda:0");
  trainer::v1::JobSpec spec;
  spec.set_optimizer("adam");
  spec.set_learning_rate(1e-2);
  spec.set_label_smoothing(0.1);
  spec.set_clip_grad_norm(0.05);  // small enough to clip every step
  const Batch batch = RandomBatch(device, 1);
  const std::vector<double> rates = {1e-2, 0.0, 5e-3};  // 0: the step must change nothing

  Trainee eager(MakeModel(device), spec);
  std::unique_ptr<TrainStep> eager_step = EagerStep(eager, spec, device);
  Trainee graphed(MakeModel(device), spec);
  ASSERT_TRUE(AllClose(Snapshot(eager.model), Snapshot(graphed.model)));
  absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> graph = Capture(graphed, spec, device, batch);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_TRUE(AllClose(Snapshot(eager.model), Snapshot(graphed.model)))
      << "capture's warm-up steps must be undone";

  for (size_t i = 0; i < rates.size(); ++i) {
    for (torch::optim::OptimizerParamGroup& group : eager.optimizer->param_groups()) {
      group.options().set_lr(rates[i]);
    }
    eager_step->Run(batch.images, batch.labels);
    const std::vector<torch::Tensor> before = Snapshot(graphed.model);
    (*graph)->SetLearningRate(rates[i]);
    (*graph)->Run(batch.images, batch.labels);
    torch::cuda::synchronize();
    EXPECT_TRUE(AllClose(Snapshot(eager.model), Snapshot(graphed.model))) << "after step " << i;
    if (rates[i] == 0) {
      EXPECT_TRUE(AllClose(before, Snapshot(graphed.model))) << "learning rate 0 moved the weights";
    } else {
      EXPECT_FALSE(AllClose(before, Snapshot(graphed.model))) << "step " << i << " did not train";
    }
  }
  // The step counts the graph kept on the device reach the optimizer's state (checkpoints).
  ExpectSameAdamState(**graph, graphed, eager, 3);
}

// bf16 weight copies: the graph's forward and backward read bf16 copies of the conv and linear
// weights, and one kernel updates the fp32 weights, the moments and the copies. The same job
// trained eagerly under autocast (ATen's casts, ATen's fused Adam) must end with the same fp32
// weights and moments, with Adam and with AdamW's decoupled decay, clipping every step.
TEST(CudaGraphStepTest, Bf16WeightCopiesTrainLikeAutocastsCasts) {
  if (CannotCapture()) GTEST_SKIP() << "no CUDA device, or this LibTorch cannot capture graphs";
  const torch::Device device("cuda:0");
  // Two input channels, so a channels_last conv weight is laid out differently from a contiguous
  // one and the update kernel walks real strides.
  const Batch batch = RandomBatch(device, 2);
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

    Trainee eager(make(), spec);
    std::unique_ptr<TrainStep> eager_step = EagerStep(eager, spec, device);
    Trainee copied(make(), spec);
    absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> copies =
        Capture(copied, spec, device, batch, /*bf16_weight_copies=*/true);
    ASSERT_TRUE(copies.ok()) << copies.status();
    // conv weight and bias, linear weight and bias; not batch norm's two.
    EXPECT_EQ((*copies)->bf16_copied_tensors(), 4);
    EXPECT_EQ((*copies)->bf16_copied_elements(), 8 * 2 * 9 + 8 + 4 * 128 + 4);
    for (const torch::Tensor& p : copied.model.ptr()->parameters()) {
      EXPECT_EQ(p.scalar_type(), torch::kFloat32) << "the model keeps its fp32 weights";
    }
    const torch::Tensor conv_weight = copied.model.ptr()->named_parameters()["conv.weight"];
    EXPECT_TRUE(conv_weight.is_contiguous(torch::MemoryFormat::ChannelsLast));
    EXPECT_FALSE(conv_weight.is_contiguous());
    ASSERT_TRUE(AllClose(Snapshot(eager.model), Snapshot(copied.model)))
        << "capture's warm-up steps must be undone";
    Trainee plain(make(), spec);
    absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> without =
        Capture(plain, spec, device, batch, /*bf16_weight_copies=*/false);
    ASSERT_TRUE(without.ok()) << without.status();
    EXPECT_EQ((*without)->bf16_copied_tensors(), 0);

    for (int i = 0; i < 4; ++i) {
      const std::vector<torch::Tensor> before = Snapshot(copied.model);
      eager_step->Run(batch.images, batch.labels);
      (*copies)->Run(batch.images, batch.labels);
      (*without)->Run(batch.images, batch.labels);
      torch::cuda::synchronize();
      EXPECT_TRUE(AllClose(Snapshot(eager.model), Snapshot(copied.model))) << "step " << i;
      EXPECT_TRUE(AllClose(Snapshot(eager.model), Snapshot(plain.model))) << "step " << i;
      EXPECT_FALSE(AllClose(before, Snapshot(copied.model))) << "step " << i << " did not train";
    }
    ExpectSameAdamState(**copies, copied, eager, 4);
  }
}

// A model of linear layers only: every parameter has a copy and none is left to ATen's fused
// kernel (nor to its clipping norms), which must still capture and train like the eager step.
TEST(CudaGraphStepTest, Bf16WeightCopiesOfEveryParameterClipAndTrain) {
  if (CannotCapture()) GTEST_SKIP() << "no CUDA device, or this LibTorch cannot capture graphs";
  const torch::Device device("cuda:0");
  trainer::v1::JobSpec spec;
  spec.set_optimizer("adam");
  spec.set_amp("bf16");
  spec.set_learning_rate(1e-2);
  spec.set_clip_grad_norm(0.05);
  const Batch batch = RandomBatch(device, 1);
  Trainee eager(MakeModel(device), spec);
  std::unique_ptr<TrainStep> eager_step = EagerStep(eager, spec, device);
  Trainee copied(MakeModel(device), spec);
  absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> graph = Capture(copied, spec, device, batch);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ((*graph)->bf16_copied_tensors(), 4);  // both layers' weights and biases
  for (int i = 0; i < 3; ++i) {
    eager_step->Run(batch.images, batch.labels);
    (*graph)->Run(batch.images, batch.labels);
    torch::cuda::synchronize();
    EXPECT_TRUE(AllClose(Snapshot(eager.model), Snapshot(copied.model))) << "step " << i;
  }
  ExpectSameAdamState(**graph, copied, eager, 3);
}

}  // namespace
}  // namespace traind
