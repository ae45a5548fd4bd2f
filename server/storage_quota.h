// What an owner holds on the daemon, for the per-token storage quota (traind
// --max-storage-per-token): the blobs it uploaded plus its jobs' directories (checkpoints,
// artifacts). This is work done only; the quota itself is enforced by QuotaLedger
// (quota_ledger.h), which adds what the owner's uploads in flight announced, so that concurrent
// uploads cannot each pass on the same measurement. There is deliberately no check here that
// looks at stored bytes alone. Blocks on disk and the store: call on the executor.
#ifndef TRAIND_SERVER_STORAGE_QUOTA_H_
#define TRAIND_SERVER_STORAGE_QUOTA_H_

#include <cstdint>
#include <string>

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

}  // namespace traind

#endif  // TRAIND_SERVER_STORAGE_QUOTA_H_
