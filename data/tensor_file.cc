#include "data/tensor_file.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/beneath.h"
#include "data/saved_dict.h"

namespace traind {

namespace {

std::string ShapeText(const torch::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

absl::StatusOr<torch::Tensor> TensorAt(const c10::Dict<c10::IValue, c10::IValue>& dict,
                                       const std::string& key) {
  const auto it = dict.find(c10::IValue(key));
  if (it == dict.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data_file: no '", key, "' in the dictionary; expected train_x, train_y, test_x, test_y"));
  }
  if (!it->value().isTensor()) {
    return absl::InvalidArgumentError(
        absl::StrCat("data_file: '", key, "' is a ", it->value().tagKind(), ", not a tensor"));
  }
  return it->value().toTensor();
}

absl::StatusOr<Split> ToSplit(const torch::Tensor& x, const torch::Tensor& y, const char* name,
                              bool regression) {
  if (x.dim() < 1 || y.dim() < 1 || x.size(0) != y.size(0)) {
    return absl::InvalidArgumentError(absl::StrCat("data_file: ", name, "_x ", ShapeText(x),
                                                   " and ", name, "_y ", ShapeText(y),
                                                   " must have the same first dimension"));
  }
  if (!x.is_floating_point() && x.scalar_type() != torch::kUInt8) {
    return absl::InvalidArgumentError(
        absl::StrCat("data_file: ", name, "_x has dtype ", c10::toString(x.scalar_type()),
                     "; expected a floating-point (or uint8) tensor"));
  }
  Split split;
  split.inputs = x.to(torch::kFloat32).contiguous();
  if (regression) {
    split.labels = y.to(torch::kFloat32).contiguous();
    return split;
  }
  if (y.dim() != 1 || y.is_floating_point() || y.is_complex() || y.scalar_type() == torch::kBool) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data_file: ", name, "_y ", ShapeText(y), " of ", c10::toString(y.scalar_type()),
        ": expected integer class indices [N] (or loss mse for float targets)"));
  }
  split.labels = y.to(torch::kInt64).contiguous();
  if (split.size() > 0 && split.labels.min().item<int64_t>() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("data_file: ", name, "_y has negative class indices"));
  }
  return split;
}

}  // namespace

absl::StatusOr<TrainTest> ReadTensorFile(int fd, bool regression) {
  absl::StatusOr<std::vector<char>> bytes = ReadAll(fd, "data_file");
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<c10::Dict<c10::IValue, c10::IValue>> saved =
      ParseSavedDict(*bytes, "data_file", "a dict with train_x, train_y, test_x, test_y");
  if (!saved.ok()) return saved.status();
  const c10::Dict<c10::IValue, c10::IValue>& dict = *saved;
  TrainTest data;
  torch::Tensor train_x, train_y, test_x, test_y;
  for (auto [key, tensor] : {std::pair{"train_x", &train_x}, std::pair{"train_y", &train_y},
                             std::pair{"test_x", &test_x}, std::pair{"test_y", &test_y}}) {
    absl::StatusOr<torch::Tensor> found = TensorAt(dict, key);
    if (!found.ok()) return found.status();
    *tensor = *std::move(found);
  }
  absl::StatusOr<Split> train = ToSplit(train_x, train_y, "train", regression);
  if (!train.ok()) return train.status();
  absl::StatusOr<Split> test = ToSplit(test_x, test_y, "test", regression);
  if (!test.ok()) return test.status();
  if (train->inputs.sizes().slice(1) != test->inputs.sizes().slice(1)) {
    return absl::InvalidArgumentError(absl::StrCat("data_file: train_x ", ShapeText(train_x),
                                                   " and test_x ", ShapeText(test_x),
                                                   " differ beyond the first dimension"));
  }
  data.train = *std::move(train);
  data.test = *std::move(test);
  return data;
}

}  // namespace traind
