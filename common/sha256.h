// SHA-256 with OpenSSL's EVP interface: how blobs are named (content addressing) and how uploads,
// artifacts and downloads are checked. Not thread-safe per object; use one per stream.
#ifndef TRAIND_COMMON_SHA256_H_
#define TRAIND_COMMON_SHA256_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace traind {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(absl::string_view bytes);
  // 64 lowercase hex digits. Ends the stream: call once.
  std::string HexDigest();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

// The hex digest of a whole file, read in 1 MiB pieces. NOT_FOUND / INTERNAL name the file.
absl::StatusOr<std::string> Sha256OfFile(const std::string& path);

struct FileDigest {
  std::string hex_digest;
  int64_t size_bytes = 0;  // what was read
};
// The digest and size of what `fd` (borrowed) reads from its offset to the end. INTERNAL names
// `shown`.
absl::StatusOr<FileDigest> Sha256OfFd(int fd, const std::string& shown);

}  // namespace traind

#endif  // TRAIND_COMMON_SHA256_H_
