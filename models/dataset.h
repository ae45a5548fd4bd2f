// Image-classification data held as whole tensors (Fashion-MNIST is 47 MB as floats): batches are
// gathered by index, with no DataLoader threads. Loaders: IDX (fashion-mnist, mnist), CIFAR-10
// binary batches, and `fake` (deterministic random images, like torchvision's FakeData).
// Thread-compatible.
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
  Split validation;  // the last 10% of the training set, as the reference scripts split it
  Split test;
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t num_classes = 10;
};

// Loads spec.dataset, applies limit_train / limit_test, resizes to `size` x `size` when `size` > 0
// and differs from the files', and normalises with mean 0.5 and std 0.5 per channel.
absl::StatusOr<ImageDataset> LoadImageDataset(const trainer::v1::JobSpec& spec, int64_t size);

// Raw (unnormalised, 0..1) splits as the loaders produce them; exposed for tests.
absl::StatusOr<Split> ReadCifar10Split(const std::string& dir, bool train, int64_t limit);
Split MakeFakeSplit(int64_t n, int64_t channels, int64_t size, int64_t classes, uint64_t seed);

}  // namespace traind

#endif  // TRAIND_MODELS_DATASET_H_
