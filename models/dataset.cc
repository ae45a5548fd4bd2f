#include "models/dataset.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "models/idx_file.h"

namespace traind {

namespace {

// Reads one images/labels pair and checks that they agree.
absl::StatusOr<Split> ReadIdxSplit(const std::string& dir, const std::string& prefix,
                                   int64_t limit) {
  ASSIGN_OR_RETURN(std::string images_path, FindIdxFile(dir, prefix + "-images-idx3-ubyte"));
  ASSIGN_OR_RETURN(std::string labels_path, FindIdxFile(dir, prefix + "-labels-idx1-ubyte"));
  ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile(images_path));
  ASSIGN_OR_RETURN(IdxArray labels, ReadIdxFile(labels_path));
  if (images.dims.size() != 3) {
    return absl::DataLossError(absl::StrCat(images_path, ": expected 3 dimensions, found ",
                                            images.dims.size()));
  }
  if (labels.dims.size() != 1 || labels.dims[0] != images.dims[0]) {
    return absl::DataLossError(absl::StrCat(labels_path, ": label count does not match ",
                                            images_path));
  }
  for (uint8_t label : labels.data) {
    if (label > 9) {
      return absl::DataLossError(absl::StrCat(labels_path, ": label ", int{label},
                                              " outside 0..9"));
    }
  }
  int64_t n = images.dims[0];
  if (limit > 0 && limit < n) n = limit;
  const int64_t h = images.dims[1], w = images.dims[2];
  Split split;
  split.images = torch::from_blob(images.data.data(), {n, 1, h, w}, torch::kUInt8)
                     .to(torch::kFloat32)
                     .div_(255.0);
  split.labels = torch::from_blob(labels.data.data(), {n}, torch::kUInt8).to(torch::kInt64);
  return split;
}

Split Slice(const Split& s, int64_t begin, int64_t end) {
  return Split{s.images.slice(0, begin, end), s.labels.slice(0, begin, end)};
}

void Transform(Split& split, int64_t height, int64_t width) {
  // ToTensor + Normalize((0.5,), (0.5,)) after Resize, as the reference's torchvision pipeline.
  if (split.images.size(2) != height || split.images.size(3) != width) {
    split.images = torch::nn::functional::interpolate(
        split.images, torch::nn::functional::InterpolateFuncOptions()
                          .size(std::vector<int64_t>{height, width})
                          .mode(torch::kBilinear)
                          .align_corners(false));
  }
  split.images = split.images.sub_(0.5).div_(0.5).contiguous();
}

}  // namespace

absl::StatusOr<ImageDataset> LoadImageDataset(const trainer::v1::JobSpec& spec, int64_t height,
                                              int64_t width) {
  if (spec.dataset() != "fashion-mnist" && spec.dataset() != "mnist") {
    return absl::InvalidArgumentError(absl::StrCat("dataset: unknown value '", spec.dataset(), "'"));
  }
  ASSIGN_OR_RETURN(Split full_train, ReadIdxSplit(spec.data_dir(), "train", spec.limit_train()));
  ASSIGN_OR_RETURN(Split test, ReadIdxSplit(spec.data_dir(), "t10k", spec.limit_test()));
  const int64_t n = full_train.size();
  const int64_t n_validation = n / 10;
  if (n - n_validation < 1) {
    return absl::InvalidArgumentError("limit_train: leaves no training images");
  }
  ImageDataset data;
  data.train = Slice(full_train, 0, n - n_validation);
  data.validation = Slice(full_train, n - n_validation, n);
  data.test = std::move(test);
  for (Split* split : {&data.train, &data.validation, &data.test}) Transform(*split, height, width);
  return data;
}

}  // namespace traind
