// Image-classification data held as whole tensors on the CPU (Fashion-MNIST is 47 MB as floats):
// batches are gathered by index, with no DataLoader threads. Thread-compatible.
#ifndef TRAIND_MODELS_DATASET_H_
#define TRAIND_MODELS_DATASET_H_

#include <torch/torch.h>

#include <string>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct Split {
  torch::Tensor images;  // [N, C, H, W] float32, normalised
  torch::Tensor labels;  // [N] int64
  int64_t size() const { return labels.size(0); }
};

struct ImageDataset {
  Split train;
  Split validation;  // the last 10% of the training file, as the reference scripts split it
  Split test;
  int64_t channels = 1;
  int64_t num_classes = 10;
};

// Loads spec.dataset from spec.data_dir, applies limit_train / limit_test, normalises with mean 0.5
// and std 0.5 and resizes to height x width when they differ from the files'.
absl::StatusOr<ImageDataset> LoadImageDataset(const trainer::v1::JobSpec& spec, int64_t height,
                                              int64_t width);

}  // namespace traind

#endif  // TRAIND_MODELS_DATASET_H_
