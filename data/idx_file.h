// Reads an IDX file (the MNIST / Fashion-MNIST format), gzip'd or not, fully validated: a missing,
// truncated or corrupt file is an error naming the file. No LibTorch here. Thread-compatible.
#ifndef TRAIND_DATA_IDX_FILE_H_
#define TRAIND_DATA_IDX_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace traind {

struct IdxArray {
  std::vector<int64_t> dims;  // e.g. {60000, 28, 28} for images, {60000} for labels
  std::vector<uint8_t> data;  // row-major, product(dims) bytes
};

// Reads an unsigned-byte IDX array (type 0x08). Transparent to gzip.
absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path);

// Finds "<dir>/<stem>" or "<dir>/<stem>.gz"; NOT_FOUND names both.
absl::StatusOr<std::string> FindIdxFile(const std::string& dir, const std::string& stem);

}  // namespace traind

#endif  // TRAIND_DATA_IDX_FILE_H_
