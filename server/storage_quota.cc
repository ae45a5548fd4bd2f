#include "server/storage_quota.h"

#include "absl/strings/str_cat.h"
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

absl::Status CheckStorageQuota(Store& store, const BlobStore& blobs, const std::string& jobs_dir,
                               const std::string& owner, int64_t adding, int64_t quota) {
  if (quota <= 0) return absl::OkStatus();
  const StorageUse use = MeasureStorage(store, blobs, jobs_dir, owner);
  if (use.total() + adding <= quota) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "storage quota: ", owner, " holds ", use.total(), " bytes (uploads ", use.uploads,
      ", job files ", use.job_files, "); ", adding, " more would exceed the ", quota,
      " bytes of traind --max-storage-per-token; trainctl delete finished jobs to free space"));
}

}  // namespace traind
