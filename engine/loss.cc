#include "engine/loss.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace traind {

LossKind LossKindFromName(const std::string& name) {
  return name == "mse" ? LossKind::kMse : LossKind::kCrossEntropy;
}

torch::Tensor ComputeLoss(LossKind kind, const torch::Tensor& output, const torch::Tensor& target,
                          double label_smoothing) {
  if (kind == LossKind::kMse) return torch::mse_loss(output, target.to(output.scalar_type()));
  if (label_smoothing > 0) {
    return torch::nn::functional::cross_entropy(
        output, target,
        torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(label_smoothing));
  }
  return torch::nn::functional::cross_entropy(output, target);
}

absl::Status CheckOutputShape(LossKind kind, const torch::Tensor& output, int64_t batch,
                              int64_t classes, const torch::Tensor& target_example) {
  std::vector<int64_t> expected = {batch};
  if (kind == LossKind::kCrossEntropy) {
    expected.push_back(classes);
  } else {
    for (int64_t d : target_example.sizes()) expected.push_back(d);
  }
  if (output.sizes() == c10::IntArrayRef(expected)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "model: forward returned shape [", absl::StrJoin(output.sizes(), ", "), "] for a batch of ",
      batch, "; expected [", absl::StrJoin(expected, ", "), "] (",
      kind == LossKind::kCrossEntropy
          ? absl::StrCat("logits over the dataset's ", classes, " classes, for cross_entropy")
          : "the targets' shape, for mse",
      ")"));
}

}  // namespace traind
