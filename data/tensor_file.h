// Datasets saved from Python: torch.save({"train_x": ..., "train_y": ..., "test_x": ...,
// "test_y": ...}, "data.pt"), read with LibTorch's torch::pickle_load. Inputs are used as saved
// (converted to float32): whatever preprocessing the model expects is the user's.
#ifndef TRAIND_DATA_TENSOR_FILE_H_
#define TRAIND_DATA_TENSOR_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "data/dataset.h"

namespace traind {

// Reads the open file `fd` (borrowed; the caller opened it, beneath the data roots for a job:
// dataset.h). INVALID_ARGUMENT naming the key, the shape or the dtype that is wrong; labels must
// be integer class indices >= 0 unless `regression` (then float targets with one row per input).
absl::StatusOr<TrainTest> ReadTensorFile(int fd, bool regression);

}  // namespace traind

#endif  // TRAIND_DATA_TENSOR_FILE_H_
