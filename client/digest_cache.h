// What trainctl remembers of files it hashed: the SHA-256 of a file by its device, inode, size and
// modification time (as git's index does), so submitting or uploading the same large file again
// does not read it again. A file whose size or mtime changed is hashed anew. The cache is
// <cache-dir>/digests, one line per file; a damaged or missing cache only costs a re-hash.
// Not thread-safe; trainctl is one thread.
#ifndef TRAIND_CLIENT_DIGEST_CACHE_H_
#define TRAIND_CLIENT_DIGEST_CACHE_H_

#include <string>

#include "absl/status/statusor.h"

namespace traind {

// The hex SHA-256 of `path`, from the cache in `cache_dir` when the file is unchanged, else read
// and hashed (and remembered; a cache that cannot be written is ignored).
absl::StatusOr<std::string> CachedSha256OfFile(const std::string& path,
                                               const std::string& cache_dir);

}  // namespace traind

#endif  // TRAIND_CLIENT_DIGEST_CACHE_H_
