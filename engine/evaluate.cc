#include "engine/evaluate.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/event_values.h"
#include "engine/mixed_precision.h"

namespace traind {

namespace {

// Evaluation batches stay small: on the CPU a 1000-image LeNet5 batch runs 5x slower per image
// than a 256-image one (cache misses in the im2col buffers).
constexpr int64_t kMaxEvalBatch = 256;
// On CUDA, small images (at most 3x32x32 values) are evaluated 1024 at a time: there the launches,
// not the arithmetic, cost (60,000 LeNet5 images on an H200: 0.085 s at 256, 0.020 s at 1024),
// and a batch of such images needs little memory. A small model (LeNet5, 62k parameters; the
// MLP) on them takes batches of about 8M input values (10,496 Fashion-MNIST images), at most
// 16,384: its activations per image are a few KiB, where VGG16's first layers alone keep 0.5 MiB.
// Images only: a small model on a table of few features may still be wide.
constexpr int64_t kCudaSmallImageEvalBatch = 1024;
constexpr int64_t kSmallImageValues = 3 * 32 * 32;
constexpr int64_t kSmallModelParameters = 1'000'000;
constexpr int64_t kSmallModelEvalBatchValues = int64_t{8} << 20;
constexpr int64_t kSmallModelMaxEvalBatch = 16384;

int64_t ParameterCount(torch::nn::AnyModule& model) {
  int64_t count = 0;
  for (const torch::Tensor& parameter : model.ptr()->parameters()) count += parameter.numel();
  return count;
}

int64_t EvalBatch(torch::nn::AnyModule& model, const Split& split, const torch::Device& device,
                  int64_t batch_size) {
  if (!device.is_cuda() || split.size() == 0 || split.inputs[0].numel() > kSmallImageValues) {
    return std::min(batch_size, kMaxEvalBatch);
  }
  const bool images = split.inputs.dim() == 4;
  if (!images || ParameterCount(model) > kSmallModelParameters) {
    return std::max(batch_size, kCudaSmallImageEvalBatch);
  }
  const int64_t by_values = std::min(
      kSmallModelMaxEvalBatch, kSmallModelEvalBatchValues / split.inputs[0].numel() / 256 * 256);
  return std::max({batch_size, kCudaSmallImageEvalBatch, by_values});
}

// cuDNN's autotuning off while evaluating: each evaluation shape (the batch, and each split's
// last partial batch) would otherwise be tuned once, 0.1-0.2 s each on an H200 for LeNet5, for a
// forward pass that takes milliseconds.
class NoAutotuning {
 public:
  NoAutotuning() : was_(at::globalContext().benchmarkCuDNN()) {
    at::globalContext().setBenchmarkCuDNN(false);
  }
  ~NoAutotuning() { at::globalContext().setBenchmarkCuDNN(was_); }
  NoAutotuning(const NoAutotuning&) = delete;
  NoAutotuning& operator=(const NoAutotuning&) = delete;

 private:
  const bool was_;
};

// Runs the model over split[begin, end) in batches of `eval_batch` without gradients, under
// autocast `amp`, and hands each batch's output and target to `each`. Gradient mode and autocast
// are per thread: a shard thread gets both here.
void ForEachBatch(
    torch::nn::AnyModule& model, const Split& split, const torch::Device& device,
    const std::string& amp, int64_t eval_batch, int64_t begin, int64_t end,
    const std::function<void(const torch::Tensor& output, const torch::Tensor& target)>& each) {
  torch::NoGradGuard no_grad;
  for (int64_t first = begin; first < end; first += eval_batch) {
    const int64_t last = std::min(first + eval_batch, end);
    const torch::Tensor target = split.labels.slice(0, first, last).to(device);
    torch::Tensor output;
    {
      AutocastScope autocast(device, amp);
      output = model.forward(split.inputs.slice(0, first, last).to(device));
    }
    each(output, target);
  }
}

// The summed loss and correct predictions of split[begin, end), summed on the device and read
// once at the end: a read per batch waits for the device each time (235 waits per epoch for
// Fashion-MNIST at batch 256).
struct Sums {
  double loss = 0;
  int64_t correct = 0;
};
Sums SumOnDevice(torch::nn::AnyModule& model, const Split& split, const torch::Device& device,
                 const std::string& amp, LossKind loss, int64_t eval_batch, int64_t begin,
                 int64_t end) {
  torch::Tensor loss_sum =
      torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  torch::Tensor correct =
      torch::zeros({}, torch::TensorOptions().dtype(torch::kInt64).device(device));
  ForEachBatch(model, split, device, amp, eval_batch, begin, end,
               [&](const torch::Tensor& output, const torch::Tensor& target) {
                 const torch::Tensor batch_loss =
                     ComputeLoss(loss, output.to(torch::kFloat32), target);
                 loss_sum += batch_loss.to(torch::kFloat64) * static_cast<double>(target.size(0));
                 if (loss == LossKind::kCrossEntropy) correct += output.argmax(1).eq(target).sum();
               });
  return Sums{loss_sum.item<double>(), correct.item<int64_t>()};
}

}  // namespace

// Predictions are compared on the CPU: early MPS builds reported 0% accuracy when the comparison
// ran on the device.
Evaluation Evaluate(torch::nn::AnyModule& model, const Split& split, const torch::Device& device,
                    const std::string& amp, int64_t batch_size, LossKind loss, int64_t num_classes,
                    bool with_confusion, ShardThreads* shards) {
  torch::NoGradGuard no_grad;
  NoAutotuning no_autotuning;
  model.ptr()->eval();
  const int64_t eval_batch = EvalBatch(model, split, device, batch_size);
  int64_t correct = 0;
  double loss_sum = 0;
  Evaluation result;
  const bool per_class = with_confusion && loss == LossKind::kCrossEntropy;
  if (per_class) {
    result.class_samples = torch::zeros({num_classes}, torch::kInt64);
    result.class_correct = torch::zeros({num_classes}, torch::kInt64);
    if (num_classes <= static_cast<int64_t>(kMaxConfusionClasses)) {
      result.confusion = torch::zeros({num_classes, num_classes}, torch::kInt64);
    }
  }
  // Not on MPS (see above), nor when figures per class are wanted.
  const bool sum_on_device = !device.is_mps() && !per_class;
  if (sum_on_device) {
    // With shard threads each takes whole evaluation batches, the same ones as without: the same
    // predictions, and the sums added in shard order.
    const int count = shards != nullptr && device.is_cpu() ? shards->shards() : 1;
    const int64_t batches = (split.size() + eval_batch - 1) / eval_batch;
    std::vector<Sums> sums(count);
    const auto sum_range = [&](int shard) {
      const int64_t begin = batches * shard / count * eval_batch;
      const int64_t end = std::min(split.size(), batches * (shard + 1) / count * eval_batch);
      sums[shard] = SumOnDevice(model, split, device, amp, loss, eval_batch, begin, end);
    };
    if (count == 1) {
      sum_range(0);
    } else {
      shards->Run(sum_range);
    }
    for (const Sums& shard : sums) {
      loss_sum += shard.loss;
      correct += shard.correct;
    }
  } else {
    ForEachBatch(model, split, device, amp, eval_batch, 0, split.size(),
                 [&](const torch::Tensor& output, const torch::Tensor& target) {
                   loss_sum +=
                       ComputeLoss(loss, output.to(torch::kFloat32), target).item<double>() *
                       static_cast<double>(target.size(0));
                   if (loss != LossKind::kCrossEntropy) return;
                   const torch::Tensor predicted = output.argmax(1).to(torch::kCPU);
                   const torch::Tensor truth = target.to(torch::kCPU);
                   const torch::Tensor right = predicted.eq(truth);
                   correct += right.sum().item<int64_t>();
                   if (!per_class) return;
                   result.class_samples.index_add_(0, truth, torch::ones_like(truth));
                   result.class_correct.index_add_(0, truth, right.to(torch::kInt64));
                   if (result.confusion.defined()) {
                     result.confusion.view(-1).index_add_(0, truth * num_classes + predicted,
                                                          torch::ones_like(truth));
                   }
                 });
  }
  model.ptr()->train();
  if (split.size() > 0) {
    result.accuracy = static_cast<double>(correct) / split.size();
    result.loss = loss_sum / split.size();
  }
  return result;
}

absl::Status CheckModelOutput(torch::nn::AnyModule& model, const Split& train,
                              const torch::Device& device, const std::string& amp, LossKind loss,
                              int64_t num_classes) {
  const int64_t n = std::min<int64_t>(2, train.size());
  const torch::Tensor inputs = train.inputs.slice(0, 0, n).to(device);
  torch::Tensor output;
  try {
    torch::NoGradGuard no_grad;
    NoAutotuning no_autotuning;  // a 2-image shape training never uses
    model.ptr()->eval();
    AutocastScope autocast(device, amp);
    output = model.forward(inputs);
  } catch (const std::exception& e) {  // c10::Error, or the TorchScript interpreter's rethrow
    model.ptr()->train();
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    std::string what = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
    if (what.size() > 2000) what.resize(2000);
    return absl::InvalidArgumentError(absl::StrCat("model: forward failed on inputs shaped [",
                                                   absl::StrJoin(inputs.sizes(), ", "),
                                                   "]: ", what));
  }
  model.ptr()->train();
  return CheckOutputShape(loss, output, n, num_classes, train.labels[0]);
}

}  // namespace traind
