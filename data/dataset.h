// Training data held as whole tensors (Fashion-MNIST is 47 MB as floats): batches are gathered by
// index, with no DataLoader threads. Loaders: IDX (fashion-mnist, mnist), CIFAR-10 binary batches,
// `fake` (deterministic random images, like torchvision's FakeData), image folders
// (image_folder.h), tensors saved by torch.save (tensor_file.h) and CSV tables (csv_file.h).
// Thread-compatible.
#ifndef TRAIND_DATA_DATASET_H_
#define TRAIND_DATA_DATASET_H_

#include <torch/torch.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/beneath.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct Split {
  // [N, ...] float32; images [N, C, H, W], normalised (before PrepareImages: uint8 as read)
  torch::Tensor inputs;
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

// Reads spec.dataset (from `data_path` for the file datasets: WorkerRequest.data_path), applies
// limit_train / limit_test and splits off the validation set. Images stay as the files hold them
// (IDX and CIFAR-10: bytes, 0..255; image folders are decoded at `size`) until PrepareImages: a
// job whose data will live on a GPU converts them there, from a quarter of the bytes.
// `data_roots` (WorkerRequest.data_roots): spec.data_dir, `data_path` and every file read under
// them are opened beneath these (common/beneath.h), here where they are read, so a path changed
// since traind admitted the job cannot lead out of them: PERMISSION_DENIED "data_dir: ..." or
// "data_file: ...". Empty: paths are opened as given (tests, tools).
absl::StatusOr<Dataset> ReadDataset(const trainer::v1::JobSpec& spec, int64_t size,
                                    const std::string& data_path = "",
                                    const std::vector<std::string>& data_roots = {});

// The most classes a job trains from a data file (its labels 0..K-1): past it the model's last
// layer and the evaluation's per-class figures grow without a bound, and such labels are a
// mistake (ids, regression targets).
inline constexpr int64_t kMaxClasses = 10000;
// K of a data file's class labels (1 + the largest): INVALID_ARGUMENT "data_file: ..." when K is
// over kMaxClasses, or when fewer than half of 0..K-1 appear (K > 10): ids, not classes.
absl::StatusOr<int64_t> CountClasses(const torch::Tensor& train_labels,
                                     const torch::Tensor& test_labels);

// The bytes every split will take once PrepareImages has made its images floats of `size` x `size`.
int64_t PreparedBytes(const Dataset& data, const trainer::v1::JobSpec& spec, int64_t size);

// Moves the splits to `device` and, for image datasets, converts them there: to floats in 0..1,
// resized (bilinear) to `size` x `size` when `size` > 0 and differs from the files', normalised
// with mean 0.5 and std 0.5 per channel, as the reference's torchvision pipeline does. Non-image
// data is used as the file holds it. Sets channels, height and width.
void PrepareImages(Dataset& data, const trainer::v1::JobSpec& spec, int64_t size,
                   torch::Device device);

// ReadDataset, then PrepareImages on the CPU.
absl::StatusOr<Dataset> LoadDataset(const trainer::v1::JobSpec& spec, int64_t size,
                                    const std::string& data_path = "",
                                    const std::vector<std::string>& data_roots = {});

// Raw splits as the loaders produce them (CIFAR-10: bytes; fake: floats in 0..1); exposed for
// tests.
absl::StatusOr<Split> ReadCifar10Split(const std::string& dir, bool train, int64_t limit,
                                       const BeneathRoots& roots = BeneathRoots());
Split MakeFakeSplit(int64_t n, int64_t channels, int64_t size, int64_t classes, uint64_t seed);

}  // namespace traind

#endif  // TRAIND_DATA_DATASET_H_
