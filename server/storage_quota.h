// What an owner holds on the daemon, for the per-token storage quota (traind
// --max-storage-per-token) and each job's disk figure (Job.disk_bytes): the blobs it uploaded,
// its jobs' directories (checkpoints, artifacts, a program's working copy) and its jobs' stored
// events (log lines, metrics). This is work done only; the quota itself is enforced by
// QuotaLedger (quota_ledger.h), which adds what the owner's uploads in flight announced, so that
// concurrent uploads cannot each pass on the same measurement. There is deliberately no check
// here that looks at stored bytes alone.
//
// A request's cost does not grow with the store: the blobs' bytes come from BlobStore's index,
// an ended job's folder is walked once and its bytes kept in the store (Store::SetFileBytes),
// its events' bytes are counted as they are stored; only running jobs' folders are walked each
// time. Blocks on disk and the store: call on the executor.
#ifndef TRAIND_SERVER_STORAGE_QUOTA_H_
#define TRAIND_SERVER_STORAGE_QUOTA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "server/blob_store.h"
#include "server/store.h"

namespace traind {

struct StorageUse {
  int64_t uploads = 0;    // bytes of blobs the owner uploaded
  int64_t job_files = 0;  // bytes under its jobs' directories
  int64_t events = 0;     // bytes of its jobs' stored events
  int64_t total() const { return uploads + job_files + events; }
};

StorageUse MeasureStorage(Store& store, const BlobStore& blobs, const std::string& jobs_dir,
                          const std::string& owner);

// Sets each job's disk_bytes: its folder's bytes (as recorded, or walked, and recorded when it
// has ended) plus its stored events'.
void FillDiskBytes(Store& store, const std::string& jobs_dir, std::vector<trainer::v1::Job*> jobs);

}  // namespace traind

#endif  // TRAIND_SERVER_STORAGE_QUOTA_H_
