// A dict saved by Python's torch.save (a dataset's tensors, a state dict), read with LibTorch's
// torch::pickle_load. Shared by the tensor datasets (data/tensor_file.cc) and loading weights
// (engine/artifacts.cc), so both refuse a bad file with the same kind of message.
#ifndef TRAIND_DATA_SAVED_DICT_H_
#define TRAIND_DATA_SAVED_DICT_H_

#include <torch/torch.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace traind {

// `field` starts every message (e.g. "data_file"); `expected` says what the dict should hold.
// LibTorch's unpickler turns a collections.OrderedDict (what model.state_dict() returns) into None,
// so such a file fails here; the message says to save dict(...) instead.
// NOT_FOUND for a file that cannot be opened; INVALID_ARGUMENT for one torch.save did not write
// (with pickle_load's reason) or one that holds something other than a dict.
absl::StatusOr<c10::Dict<c10::IValue, c10::IValue>> ReadSavedDict(const std::string& path,
                                                                  const std::string& field,
                                                                  const std::string& expected);
// The same for a file's bytes, read by the caller (a job's data_file, opened beneath the data
// roots: data/tensor_file.cc).
absl::StatusOr<c10::Dict<c10::IValue, c10::IValue>> ParseSavedDict(const std::vector<char>& bytes,
                                                                   const std::string& field,
                                                                   const std::string& expected);

}  // namespace traind

#endif  // TRAIND_DATA_SAVED_DICT_H_
