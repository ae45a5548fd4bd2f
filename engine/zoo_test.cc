// Shapes and behaviour of every model, dataset loader and loop option, on small inputs.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/job_spec.h"
#include "common/temp_dir_for_tests.h"
#include "data/augment.h"
#include "data/dataset.h"
#include "engine/benchmarks.h"
#include "engine/optimizer_factory.h"
#include "engine/train_step.h"
#include "gtest/gtest.h"
#include "models/model_factory.h"

namespace traind {
namespace {

using trainer::v1::JobSpec;

JobSpec Spec(const std::string& model, const std::string& dataset = "fake") {
  JobSpec spec;
  spec.set_model(model);
  spec.set_dataset(dataset);
  ApplyDefaults(&spec);
  return spec;
}

int64_t ParameterCount(torch::nn::AnyModule& model) {
  int64_t n = 0;
  for (const auto& p : model.ptr()->parameters()) n += p.numel();
  return n;
}

TEST(ZooTest, Vgg16MatchesTorchvisionAt32And224) {
  JobSpec spec = Spec("vgg16");
  auto model = CreateModel(spec, ModelInput{3, 32, 32, 10});
  ASSERT_TRUE(model.ok());
  // torchvision.models.vgg16_bn(num_classes=10): 134,309,962 parameters.
  EXPECT_EQ(ParameterCount(*model), 134309962);
  model->ptr()->eval();
  EXPECT_EQ(model->forward(torch::randn({2, 3, 32, 32})).sizes(), (std::vector<int64_t>{2, 10}));
  EXPECT_EQ(model->forward(torch::randn({1, 3, 224, 224})).sizes(), (std::vector<int64_t>{1, 10}));
}

// At 32 px VGG16's features end at 1x1 and its forward folds the 7x7 pool's copies into the first
// classifier weight (models/vgg16.cc): the same outputs, image and weight gradients as
// torchvision's order (features, pool, flatten, classifier) run by hand on the model's modules.
TEST(ZooTest, Vgg16At32PxFoldsThePoolIntoTheClassifierWithTheSameResults) {
  torch::manual_seed(5);
  auto model = *CreateModel(Spec("vgg16"), ModelInput{3, 32, 32, 10});
  model.ptr()->eval();  // no dropout, batch norm from its running statistics: both runs alike
  auto children = model.ptr()->named_children();
  const torch::Tensor first_weight = model.ptr()->named_parameters()["classifier.0.weight"];
  ASSERT_EQ(first_weight.size(1), 512 * 7 * 7);
  const torch::Tensor images = torch::randn({3, 3, 32, 32});

  const torch::Tensor pooled_images = images.clone().requires_grad_();
  const torch::Tensor features =
      children["features"]->as<torch::nn::Sequential>()->forward(pooled_images);
  ASSERT_EQ(features.sizes(), (std::vector<int64_t>{3, 512, 1, 1}));
  const torch::Tensor pooled =
      children["classifier"]->as<torch::nn::Sequential>()->forward(torch::flatten(
          children["avgpool"]->as<torch::nn::AdaptiveAvgPool2d>()->forward(features), 1));
  const torch::Tensor grad = torch::randn(pooled.sizes());
  pooled.backward(grad);
  const torch::Tensor pooled_weight_grad = first_weight.grad().clone();
  first_weight.mutable_grad() = torch::Tensor();

  const torch::Tensor folded_images = images.clone().requires_grad_();
  const torch::Tensor folded = model.forward(folded_images);
  folded.backward(grad);
  EXPECT_TRUE(torch::allclose(folded, pooled, 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(first_weight.grad(), pooled_weight_grad, 1e-4, 1e-6));
  EXPECT_TRUE(torch::allclose(folded_images.grad(), pooled_images.grad(), 1e-3, 1e-6));
  // Not vacuous: the gradients are there and not all zero.
  EXPECT_GT(pooled_weight_grad.abs().max().item<double>(), 0);
  EXPECT_GT(pooled_images.grad().abs().max().item<double>(), 0);
}

// VGG16's convolution biases are frozen (models/vgg16.cc): the batch norm after each convolution
// subtracts the batch mean, so in training a bias changes no output and its gradient is zero.
// Checked here on a copy whose biases are non-zero and do take gradients, then on a step of the
// model as built: the biases get no gradient and keep their values, the weights train.
TEST(ZooTest, Vgg16ConvolutionBiasesAreFrozenBecauseBatchNormCancelsThem) {
  JobSpec spec = Spec("vgg16");
  torch::manual_seed(3);
  const torch::Tensor images = torch::randn({4, 3, 32, 32});
  const torch::Tensor labels = torch::randint(10, {4});
  {  // one VGG16 at a time: each is half a gigabyte
    auto model = *CreateModel(spec, ModelInput{3, 32, 32, 10});
    std::vector<torch::Tensor> biases;
    for (const auto& module : model.ptr()->modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) biases.push_back(conv->bias);
    }
    for (const auto& item : model.ptr()->named_parameters()) {
      const bool conv_bias = std::any_of(biases.begin(), biases.end(), [&](const torch::Tensor& b) {
        return b.is_same(item.value());
      });
      EXPECT_EQ(item.value().requires_grad(), !conv_bias) << item.key();
    }
    ASSERT_EQ(biases.size(), 13u);
    int64_t trainable = 0;
    for (const torch::Tensor& p : TrainableParameters(*model.ptr())) trainable += p.numel();
    EXPECT_EQ(trainable, 134309962 - 4224);  // 2x64 + 2x128 + 3x256 + 6x512 bias values

    model.ptr()->train();
    {  // The premise: non-zero biases that take gradients change nothing and get ~zero ones.
      torch::NoGradGuard no_grad;
      for (torch::Tensor& b : biases) b.normal_(0, 1);
    }
    for (torch::Tensor& b : biases) b.set_requires_grad(true);
    torch::manual_seed(4);  // the same dropout masks for both forward passes
    const torch::Tensor with_bias = model.forward(images);
    torch::nn::functional::cross_entropy(with_bias, labels).backward();
    for (const torch::Tensor& b : biases) {
      ASSERT_TRUE(b.grad().defined());
      EXPECT_LT(b.grad().abs().max().item<double>(), 1e-5);
    }
    {
      torch::NoGradGuard no_grad;
      for (torch::Tensor& b : biases) b.zero_();
    }
    torch::manual_seed(4);
    EXPECT_TRUE(torch::allclose(model.forward(images).detach(), with_bias.detach(), 1e-4, 1e-4));
  }

  // As built: backward gives the biases no gradient (the weights one), and a step leaves them
  // as they are.
  auto fresh = *CreateModel(spec, ModelInput{3, 32, 32, 10});
  torch::Tensor weight = fresh.ptr()->parameters()[0], bias = fresh.ptr()->parameters()[1];
  {
    torch::NoGradGuard no_grad;
    bias.fill_(0.25);  // features.0.bias
  }
  torch::nn::functional::cross_entropy(fresh.forward(images), labels).backward();
  EXPECT_TRUE(weight.grad().defined());
  EXPECT_FALSE(bias.grad().defined());
  for (torch::Tensor& p : fresh.ptr()->parameters()) p.mutable_grad() = torch::Tensor();
  auto optimizer = *CreateOptimizer(spec, fresh.ptr()->parameters());
  TrainStep step(fresh, optimizer.get(), torch::kCPU, "", 1, Augmentation{}, 1);
  const torch::Tensor first_weight = weight.clone();
  step.Run(images, labels);
  EXPECT_TRUE(torch::all(bias == 0.25).item<bool>());
  EXPECT_FALSE(torch::equal(weight, first_weight));
}

TEST(ZooTest, ResNet18MatchesTorchvision) {
  JobSpec spec = Spec("resnet18");
  auto model = CreateModel(spec, ModelInput{3, 224, 224, 1000});
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(ParameterCount(*model), 11689512);  // torchvision.models.resnet18()
  model->ptr()->eval();
  EXPECT_EQ(model->forward(torch::randn({1, 3, 224, 224})).sizes(),
            (std::vector<int64_t>{1, 1000}));
  spec.set_cifar_stem(true);
  auto cifar = CreateModel(spec, ModelInput{3, 32, 32, 10});
  ASSERT_TRUE(cifar.ok());
  cifar->ptr()->eval();
  EXPECT_EQ(cifar->forward(torch::randn({2, 3, 32, 32})).sizes(), (std::vector<int64_t>{2, 10}));
}

TEST(ZooTest, LeNet5AndMlpParameterCounts) {
  auto lenet = CreateModel(Spec("lenet5"), ModelInput{1, 32, 32, 10});
  ASSERT_TRUE(lenet.ok());
  EXPECT_EQ(ParameterCount(*lenet), 61706);
  auto mlp = CreateModel(Spec("mlp"), ModelInput{1, 28, 28, 10});
  ASSERT_TRUE(mlp.ok());
  EXPECT_EQ(ParameterCount(*mlp), 784 * 256 + 256 * 128 + 128 * 64 + 64 * 10 + 10);
  EXPECT_EQ(CreateModel(Spec("lenet5"), ModelInput{1, 28, 28, 10}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ZooTest, FakeDataIsDeterministicAndShaped) {
  JobSpec spec = Spec("resnet18");
  spec.set_num_samples(50);
  spec.set_image_size(40);
  auto a = LoadDataset(spec, ImageSizeFor(spec));
  auto b = LoadDataset(spec, ImageSizeFor(spec));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->train.size(), 45);
  EXPECT_EQ(a->validation.size(), 5);
  EXPECT_EQ(a->test.size(), 10);
  EXPECT_EQ(a->train.inputs.sizes(), (std::vector<int64_t>{45, 3, 40, 40}));
  EXPECT_TRUE(torch::equal(a->train.inputs, b->train.inputs));
  EXPECT_LE(a->train.labels.max().item<int64_t>(), 9);
}

TEST(ZooTest, Cifar10BinaryBatches) {
  TempDirForTests temp;
  const std::string& dir = temp.path();
  auto write = [&](const std::string& name, int records, int cut) {
    std::string bytes;
    for (int r = 0; r < records; ++r) {
      bytes += static_cast<char>(r % 10);
      bytes += std::string(3072, static_cast<char>(r));
    }
    bytes.resize(bytes.size() - cut);
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
  };
  for (int i = 1; i <= 5; ++i) write("data_batch_" + std::to_string(i) + ".bin", 20, 0);
  write("test_batch.bin", 10, 0);
  JobSpec spec = Spec("resnet18", "cifar10");
  spec.set_data_dir(dir);
  auto data = LoadDataset(spec, 0);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train.size() + data->validation.size(), 100);
  EXPECT_EQ(data->test.size(), 10);
  EXPECT_EQ(data->channels, 3);
  EXPECT_EQ(data->train.labels[3].item<int64_t>(), 3);

  write("data_batch_2.bin", 20, 100);  // truncated
  auto bad = LoadDataset(spec, 0);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find(dir + "/data_batch_2.bin"), std::string::npos);
}

TEST(ZooTest, AugmentationKeepsShapesAndIsSeeded) {
  torch::Tensor images = torch::rand({8, 3, 32, 32});
  torch::Generator a = at::detail::createCPUGenerator(1), b = at::detail::createCPUGenerator(1);
  Augmentation augmentation{4, true};
  torch::Tensor x = Augment(images, augmentation, a);
  torch::Tensor y = Augment(images, augmentation, b);
  EXPECT_EQ(x.sizes(), images.sizes());
  EXPECT_TRUE(torch::equal(x, y));
  EXPECT_FALSE(torch::equal(x, images));
  // A flip alone moves pixels but keeps each image's values.
  torch::Tensor flipped = Augment(images, Augmentation{0, true}, a);
  EXPECT_TRUE(torch::allclose(flipped.sum({1, 2, 3}), images.sum({1, 2, 3})));
}

// Accumulating two half batches with plain SGD gives the same update as one full batch.
TEST(ZooTest, GradientAccumulationMatchesTheFullBatch) {
  JobSpec spec = Spec("mlp");
  spec.set_optimizer("sgd");
  spec.set_learning_rate(0.1);
  torch::Tensor images = torch::randn({64, 1, 28, 28});
  torch::Tensor labels = torch::randint(10, {64});
  auto run = [&](int accumulate) {
    torch::manual_seed(5);
    auto model = *CreateModel(spec, ModelInput{1, 28, 28, 10});
    auto optimizer = *CreateOptimizer(spec, model.ptr()->parameters());
    TrainStep step(model, optimizer.get(), torch::kCPU, "", accumulate, Augmentation{}, 1);
    const int64_t micro = 64 / accumulate;
    for (int i = 0; i < accumulate; ++i) {
      step.Run(images.slice(0, i * micro, (i + 1) * micro),
               labels.slice(0, i * micro, (i + 1) * micro));
    }
    step.Flush();
    return model.ptr()->parameters()[0].clone();
  };
  torch::Tensor full = run(1), accumulated = run(2), four = run(4);
  EXPECT_TRUE(torch::allclose(full, accumulated, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(full, four, 1e-5, 1e-6));
}

TEST(ZooTest, Bf16AutocastOnCpuTrains) {
  JobSpec spec = Spec("lenet5");
  torch::manual_seed(1);
  auto model = *CreateModel(spec, ModelInput{1, 32, 32, 10});
  auto optimizer = *CreateOptimizer(spec, model.ptr()->parameters());
  TrainStep step(model, optimizer.get(), torch::kCPU, "bf16", 1, Augmentation{}, 1);
  torch::Tensor images = torch::randn({32, 1, 32, 32});
  torch::Tensor labels = torch::randint(10, {32});
  const double first = step.Run(images, labels).item<double>();
  double last = first;
  for (int i = 0; i < 30; ++i) last = step.Run(images, labels).item<double>();
  EXPECT_LT(last, first * 0.5);  // it memorises one batch
  // Weights stay fp32: autocast changes the compute dtype, not the parameters.
  EXPECT_EQ(model.ptr()->parameters()[0].scalar_type(), torch::kFloat32);
}

TEST(ZooTest, OptimizerOptionsReachLibTorch) {
  JobSpec spec = Spec("mlp");
  auto model = *CreateModel(spec, ModelInput{1, 28, 28, 10});
  spec.set_optimizer("sgd");
  spec.set_learning_rate(0.05);
  spec.set_momentum(0.9);
  spec.set_nesterov(true);
  spec.set_weight_decay(1e-4);
  auto sgd = CreateOptimizer(spec, model.ptr()->parameters());
  ASSERT_TRUE(sgd.ok());
  const auto& sgd_options =
      static_cast<const torch::optim::SGDOptions&>((*sgd)->param_groups()[0].options());
  EXPECT_DOUBLE_EQ(sgd_options.lr(), 0.05);
  EXPECT_DOUBLE_EQ(sgd_options.momentum(), 0.9);
  EXPECT_TRUE(sgd_options.nesterov());
  EXPECT_DOUBLE_EQ(sgd_options.weight_decay(), 1e-4);

  spec.set_optimizer("adamw");
  spec.clear_weight_decay();
  auto adamw = CreateOptimizer(spec, model.ptr()->parameters());
  ASSERT_TRUE(adamw.ok());
  const auto& adamw_options =
      static_cast<const torch::optim::AdamWOptions&>((*adamw)->param_groups()[0].options());
  EXPECT_DOUBLE_EQ(adamw_options.weight_decay(), 1e-2);  // PyTorch's AdamW default
  spec.set_optimizer("rmsprop");
  EXPECT_EQ(CreateOptimizer(spec, model.ptr()->parameters()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Six Adam (or AdamW) steps with LibTorch's optimizer or CreateFusedAdam (ATen's fused kernel on
// CUDA) over a few parameters, one of them channels_last, whose gradients are fixed random
// tensors (so the two cannot drift apart through the forward pass; the 4-d one arrives NCHW),
// through a checkpoint of the optimizer after `save_at` steps when that is >= 0. Returns the
// parameters.
std::vector<torch::Tensor> AdamSteps(const torch::Device& device, bool fused, bool decoupled,
                                     int save_at = -1) {
  torch::manual_seed(3);
  std::vector<torch::Tensor> parameters = {
      torch::randn({8, 3, 3, 3}).to(device).contiguous(torch::MemoryFormat::ChannelsLast),
      torch::randn({64, 32}).to(device), torch::randn({32}).to(device)};
  for (auto& p : parameters) p.requires_grad_(true);
  auto make = [&]() -> std::unique_ptr<torch::optim::Optimizer> {
    const double lr = 1e-2, weight_decay = 1e-3;
    if (fused) return CreateFusedAdam(parameters, lr, weight_decay, decoupled);
    if (decoupled) {
      return std::make_unique<torch::optim::AdamW>(
          parameters, torch::optim::AdamWOptions(lr).weight_decay(weight_decay));
    }
    return std::make_unique<torch::optim::Adam>(
        parameters, torch::optim::AdamOptions(lr).weight_decay(weight_decay));
  };
  auto optimizer = make();
  for (int i = 0; i < 6; ++i) {
    if (i == save_at) {
      torch::serialize::OutputArchive out;
      optimizer->save(out);
      std::stringstream bytes;
      out.save_to(bytes);
      optimizer = make();
      torch::serialize::InputArchive in;
      in.load_from(bytes);
      optimizer->load(in);
    }
    optimizer->zero_grad();
    torch::Generator rng = at::detail::createCPUGenerator(100 + i);
    for (auto& p : parameters) {
      p.mutable_grad() = (torch::randn(p.sizes(), rng) * 0.1).to(device);
    }
    optimizer->step();
  }
  std::vector<torch::Tensor> result;
  for (const auto& p : parameters) result.push_back(p.detach().cpu());
  return result;
}

// On CUDA this checks ATen's fused kernel against LibTorch's Adam. On the CPU CreateFusedAdam is
// LibTorch's Adam itself, so there it checks only the checkpoint round trip through its load().
TEST(ZooTest, FusedAdamMatchesLibTorchAdamAndResumesFromACheckpoint) {
  std::vector<torch::Device> devices = {torch::kCPU};
  if (torch::cuda::is_available()) devices.push_back(torch::Device(torch::kCUDA, 0));
  for (const torch::Device& device : devices) {
    for (bool decoupled : {false, true}) {
      const auto reference = AdamSteps(device, false, decoupled);
      const auto fused = AdamSteps(device, true, decoupled);
      const auto resumed = AdamSteps(device, true, decoupled, 3);
      ASSERT_EQ(reference.size(), fused.size());
      for (size_t i = 0; i < reference.size(); ++i) {
        EXPECT_TRUE(torch::allclose(fused[i], reference[i], 1e-5, 1e-6))
            << device << " decoupled=" << decoupled << " parameter " << i;
        EXPECT_TRUE(torch::allclose(resumed[i], fused[i], 1e-6, 1e-7))
            << device << " decoupled=" << decoupled << " parameter " << i;
      }
    }
  }
  auto model = *CreateModel(Spec("mlp"), ModelInput{1, 28, 28, 10});
  EXPECT_FALSE(FusedAdamAvailable(model.ptr()->parameters()));  // CPU parameters
}

TEST(ZooTest, ConvNetsTrainChannelsLastOnCuda) {
  const torch::Device cuda(torch::kCUDA, 0);
  EXPECT_TRUE(UsesChannelsLast(Spec("vgg16"), cuda));
  EXPECT_TRUE(UsesChannelsLast(Spec("resnet18"), cuda));
  EXPECT_FALSE(UsesChannelsLast(Spec("lenet5"), cuda));
  EXPECT_FALSE(UsesChannelsLast(Spec("resnet18"), torch::kCPU));
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  JobSpec spec = Spec("resnet18");
  spec.set_cifar_stem(true);
  torch::manual_seed(2);
  auto model = *CreateModel(spec, ModelInput{3, 32, 32, 10});
  PlaceModel(model, spec, cuda);
  for (const auto& p : model.ptr()->parameters()) {
    if (p.dim() == 4) EXPECT_TRUE(p.is_contiguous(torch::MemoryFormat::ChannelsLast));
  }
  auto optimizer = *CreateOptimizer(spec, model.ptr()->parameters());
  TrainStep step(model, optimizer.get(), cuda, "bf16", 1, Augmentation{}, 1);
  torch::Tensor images = torch::randn({16, 3, 32, 32}).to(cuda);
  torch::Tensor labels = torch::randint(10, {16}).to(cuda);
  const double first = step.Run(images, labels).item<double>();
  double last = first;
  for (int i = 0; i < 20; ++i) last = step.Run(images, labels).item<double>();
  EXPECT_LT(last, first * 0.5);  // it memorises one batch
  for (const auto& p : model.ptr()->parameters()) {
    if (p.dim() == 4) EXPECT_TRUE(p.is_contiguous(torch::MemoryFormat::ChannelsLast));
  }
}

TEST(ZooTest, MatmulBenchmarkReportsRate) {
  trainer::v1::Benchmark bench;
  bench.set_kind("matmul");
  bench.set_size(128);
  bench.set_dtype("fp32");
  bench.set_repeat(3);
  bench.set_warmup(1);
  std::atomic<bool> stop{false};
  auto result = RunMatmulBenchmark(bench, torch::kCPU, stop);
  ASSERT_TRUE(result.ok());
  EXPECT_GT(result->seconds(), 0);
  EXPECT_NEAR(result->tflops(), 2.0 * 128 * 128 * 128 / result->seconds() / 1e12, 1e-9);
  bench.set_dtype("bf16");
  EXPECT_TRUE(RunMatmulBenchmark(bench, torch::kCPU, stop).ok());
}

}  // namespace
}  // namespace traind
