// Retention: traind --retain-finished DAYS. Jobs (and whole sweeps) that ended more than DAYS ago
// are deleted as `trainctl delete` would: their rows and events, their directories and the uploads
// nothing else uses; then the freed pages go back to the file system (Store::Compact). The work is
// done a small batch at a time, each in its own short transaction, so the store is never held for
// long and the daemon keeps serving. Thread-safe.
#ifndef TRAIND_SERVER_RETENTION_H_
#define TRAIND_SERVER_RETENTION_H_

#include <cstdint>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/blob_store.h"
#include "server/store.h"

namespace traind {

class Retention {
 public:
  struct Options {
    absl::Duration keep;                    // > 0
    absl::Duration every = absl::Hours(1);  // how often a pass runs (the first one at start)
    std::string jobs_dir;                   // <state-dir>/jobs
  };
  Retention(Store* store, BlobStore* blobs, Options options);
  ~Retention();  // stops the thread (a pass in progress finishes its batch)

  struct Pruned {
    int jobs = 0;
    int sweeps = 0;
    int blobs = 0;
  };
  // One pass now: everything that ended before `now - keep`. Also what the thread runs.
  absl::StatusOr<Pruned> PruneOnce(absl::Time now);

  // Starts the periodic passes.
  void Start();

 private:
  void Loop();
  // After the rows are gone: the job's directory, and the blobs only `owner` held.
  absl::Status RemoveFiles(int64_t job_id, const std::string& owner,
                           const std::vector<std::string>& unused_blobs, Pruned* pruned);

  Store* const store_;
  BlobStore* const blobs_;
  const Options options_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace traind

#endif  // TRAIND_SERVER_RETENTION_H_
