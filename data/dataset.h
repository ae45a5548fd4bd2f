// Training data held as whole tensors (Fashion-MNIST is 47 MB as floats): batches are gathered by
// index, with no DataLoader threads. Loaders: IDX (fashion-mnist, mnist), CIFAR-10 binary batches,
// `fake` (deterministic random images, like torchvision's FakeData), image folders
// (image_folder.h), tensors saved by torch.save (tensor_file.h) and CSV tables (csv_file.h).
// Thread-compatible.
#ifndef TRAIND_DATA_DATASET_H_
#define TRAIND_DATA_DATASET_H_

#include <torch/torch.h>

#include <string>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct Split {
  torch::Tensor inputs;  // [N, ...] float32; images [N, C, H, W], normalised
  torch::Tensor labels;  // [N] int64 class indices; with loss mse, float32 targets [N, ...]
  int64_t size() const { return labels.size(0); }
};

// A dataset's two halves as its files hold them, before the validation split.
struct TrainTest {
  Split train;
  Split test;
  int64_t num_classes = 0;  // when the files say (image folders: one per class folder)
};

struct Dataset {
  Split train;
  Split validation;  // the last 10% of the training set, as the reference scripts split it
  Split test;
  // Images: their shape. Other inputs (tables, arbitrary tensors): 0, 0, 0.
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  // Classification: 1 + the largest label. mse: the size of one target.
  int64_t num_classes = 10;
};

// Loads spec.dataset (from `data_path` for the file datasets: WorkerRequest.data_path), applies
// limit_train / limit_test, and for images resizes to `size` x `size` when `size` > 0 and differs
// from the files', and normalises with mean 0.5 and std 0.5 per channel. Non-image data is used as
// the file holds it.
absl::StatusOr<Dataset> LoadDataset(const trainer::v1::JobSpec& spec, int64_t size,
                                    const std::string& data_path = "");

// Raw (unnormalised, 0..1) splits as the loaders produce them; exposed for tests.
absl::StatusOr<Split> ReadCifar10Split(const std::string& dir, bool train, int64_t limit);
Split MakeFakeSplit(int64_t n, int64_t channels, int64_t size, int64_t classes, uint64_t seed);

}  // namespace traind

#endif  // TRAIND_DATA_DATASET_H_
