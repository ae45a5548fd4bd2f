// Reads an IDX file (the MNIST / Fashion-MNIST format), gzip'd or not, fully validated: a missing,
// truncated or corrupt file is an error naming the file. No LibTorch here. Thread-compatible.
#ifndef TRAIND_DATA_IDX_FILE_H_
#define TRAIND_DATA_IDX_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/beneath.h"

namespace traind {

struct IdxArray {
  std::vector<int64_t> dims;  // e.g. {60000, 28, 28} for images, {60000} for labels
  std::vector<uint8_t> data;  // row-major, product(dims) bytes
};

// Reads an unsigned-byte IDX array (type 0x08). Transparent to gzip.
absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path);
// The same from the open `fd` (borrowed: read through a duplicate), from its current offset;
// `path` names it in messages.
absl::StatusOr<IdxArray> ReadIdxFile(int fd, const std::string& path);

// ReadIdxFile with a cache of decompressed copies in `cache_dir` (traind's STATE/cache, which
// workers learn from TRAIND_CACHE_DIR): gunzipping Fashion-MNIST's training images takes a third
// of a second of every job that reads them; the copy is a plain read. A copy is keyed by the
// source's path, size and modification time, written whole under a temporary name and renamed,
// and read as untrusted as the source (a copy that does not read is ignored and rewritten).
// Plain files, and an empty `cache_dir`, are read directly; a cache that cannot be written only
// costs the speed-up.
absl::StatusOr<IdxArray> ReadIdxFileCached(const std::string& path, const std::string& cache_dir);
// The same for a source already open (borrowed), keyed by `path` and what fstat says of `fd`.
absl::StatusOr<IdxArray> ReadIdxFileCached(int fd, const std::string& path,
                                           const std::string& cache_dir);

// An IDX file found and opened: `path` names it in messages and keys the cache.
struct IdxFile {
  std::string path;
  UniqueFd fd;
};

// Opens "<dir>/<stem>" or else "<dir>/<stem>.gz", each a regular file beneath `roots`
// (common/beneath.h; unconfined: as named). NOT_FOUND names both; PERMISSION_DENIED
// "data_dir: PATH is outside the daemon's data roots ..." when `dir` or the file leads out.
absl::StatusOr<IdxFile> OpenIdxFile(const std::string& dir, const std::string& stem,
                                    const BeneathRoots& roots = BeneathRoots());

}  // namespace traind

#endif  // TRAIND_DATA_IDX_FILE_H_
