#include "server/storage_quota.h"

#include "server/job_files.h"

namespace traind {

StorageUse MeasureStorage(Store& store, const BlobStore& blobs, const std::string& jobs_dir,
                          const std::string& owner) {
  StorageUse use;
  use.uploads = blobs.BytesOwnedBy(owner);
  if (absl::StatusOr<std::vector<int64_t>> ids = store.JobIdsOwnedBy(owner); ids.ok()) {
    for (int64_t id : *ids) use.job_files += JobDiskBytes(jobs_dir, id);
  }
  return use;
}

}  // namespace traind
