#include "engine/evaluate.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/mixed_precision.h"

namespace traind {

namespace {

// Evaluation batches stay small: on the CPU a 1000-image LeNet5 batch runs 5x slower per image
// than a 256-image one (cache misses in the im2col buffers).
constexpr int64_t kMaxEvalBatch = 256;

}  // namespace

// Predictions are compared on the CPU: early MPS builds reported 0% accuracy when the comparison
// ran on the device.
Evaluation Evaluate(torch::nn::AnyModule& model, const Split& split, const torch::Device& device,
                    const std::string& amp, int64_t batch_size, LossKind loss, int64_t num_classes,
                    bool with_confusion) {
  torch::NoGradGuard no_grad;
  model.ptr()->eval();
  const int64_t eval_batch = std::min(batch_size, kMaxEvalBatch);
  int64_t correct = 0;
  double loss_sum = 0;
  Evaluation result;
  if (with_confusion && loss == LossKind::kCrossEntropy) {
    result.confusion = torch::zeros({num_classes, num_classes}, torch::kInt64);
  }
  for (int64_t begin = 0; begin < split.size(); begin += eval_batch) {
    const int64_t end = std::min(begin + eval_batch, split.size());
    const torch::Tensor target = split.labels.slice(0, begin, end).to(device);
    torch::Tensor output;
    {
      AutocastScope autocast(device, amp);
      output = model.forward(split.inputs.slice(0, begin, end).to(device));
    }
    loss_sum += ComputeLoss(loss, output.to(torch::kFloat32), target).item<double>() * (end - begin);
    if (loss != LossKind::kCrossEntropy) continue;
    const torch::Tensor predicted = output.argmax(1).to(torch::kCPU);
    const torch::Tensor truth = target.to(torch::kCPU);
    correct += predicted.eq(truth).sum().item<int64_t>();
    if (result.confusion.defined()) {
      result.confusion.view(-1).index_add_(0, truth * num_classes + predicted,
                                           torch::ones_like(truth));
    }
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
    model.ptr()->eval();
    AutocastScope autocast(device, amp);
    output = model.forward(inputs);
  } catch (const std::exception& e) {  // c10::Error, or the TorchScript interpreter's rethrow
    model.ptr()->train();
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    std::string what = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
    if (what.size() > 2000) what.resize(2000);
    return absl::InvalidArgumentError(
        absl::StrCat("model: forward failed on inputs shaped [", absl::StrJoin(inputs.sizes(), ", "),
                     "]: ", what));
  }
  model.ptr()->train();
  return CheckOutputShape(loss, output, n, num_classes, train.labels[0]);
}

}  // namespace traind
