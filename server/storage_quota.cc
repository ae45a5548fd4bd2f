#include "server/storage_quota.h"

#include "server/job_files.h"

namespace traind {

namespace {

// The folder's bytes of a job whose row has none: walked, and kept once the job has ended.
int64_t WalkFiles(Store& store, const std::string& jobs_dir, int64_t job_id, bool ended) {
  const int64_t bytes = JobDiskBytes(jobs_dir, job_id);
  if (ended) (void)store.SetFileBytes(job_id, bytes);  // else measured again next time
  return bytes;
}

}  // namespace

StorageUse MeasureStorage(Store& store, const BlobStore& blobs, const std::string& jobs_dir,
                          const std::string& owner) {
  StorageUse use;
  use.uploads = blobs.BytesOwnedBy(owner);
  if (absl::StatusOr<Store::OwnerDiskUse> jobs = store.DiskUseOfOwner(owner); jobs.ok()) {
    use.job_files = jobs->measured_file_bytes;
    use.events = jobs->event_bytes;
    for (const Store::OwnerDiskUse::Unmeasured& job : jobs->unmeasured) {
      use.job_files += WalkFiles(store, jobs_dir, job.job_id, job.ended);
    }
  }
  return use;
}

void FillDiskBytes(Store& store, const std::string& jobs_dir, std::vector<trainer::v1::Job*> jobs) {
  std::vector<int64_t> ids;
  for (const trainer::v1::Job* job : jobs) ids.push_back(job->id());
  absl::StatusOr<std::map<int64_t, Store::DiskUse>> uses = store.DiskUseOf(ids);
  for (trainer::v1::Job* job : jobs) {
    Store::DiskUse use;
    if (uses.ok()) {
      if (auto found = uses->find(job->id()); found != uses->end()) use = found->second;
    }
    const int64_t files =
        use.file_bytes >= 0 ? use.file_bytes : WalkFiles(store, jobs_dir, job->id(), use.ended);
    job->set_disk_bytes(files + use.event_bytes);
  }
}

}  // namespace traind
