// The per-token storage quota (traind --max-storage-per-token): what an owner holds on the daemon
// is the blobs it uploaded plus its jobs' directories (checkpoints, artifacts). Checked before an
// upload stores its first byte. Local callers (the Unix socket) are not limited, as with the other
// per-token limits. Blocks on disk and the store: call on the executor.
#ifndef TRAIND_SERVER_STORAGE_QUOTA_H_
#define TRAIND_SERVER_STORAGE_QUOTA_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "server/blob_store.h"
#include "server/store.h"

namespace traind {

struct StorageUse {
  int64_t uploads = 0;    // bytes of blobs the owner uploaded
  int64_t job_files = 0;  // bytes under its jobs' directories
  int64_t total() const { return uploads + job_files; }
};

StorageUse MeasureStorage(Store& store, const BlobStore& blobs, const std::string& jobs_dir,
                          const std::string& owner);

// RESOURCE_EXHAUSTED with the numbers when `adding` more bytes would take `owner` past `quota`
// (0: no quota).
absl::Status CheckStorageQuota(Store& store, const BlobStore& blobs, const std::string& jobs_dir,
                               const std::string& owner, int64_t adding, int64_t quota);

}  // namespace traind

#endif  // TRAIND_SERVER_STORAGE_QUOTA_H_
