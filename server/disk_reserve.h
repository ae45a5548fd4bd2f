// DiskReserve: space kept free for traind's own last words. A file of a few MiB in the state
// directory that traind gives back when the disk holding its state fills (a program wrote until
// ENOSPC, an upload, someone else's files), so that a job's end can still be stored: without it
// the job stayed RUNNING for good, `cancel` said so, `delete` refused it, and a restart ran the
// program again, which filled the disk again. Recreated once there is room again. Thread-safe.
#ifndef TRAIND_SERVER_DISK_RESERVE_H_
#define TRAIND_SERVER_DISK_RESERVE_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace traind {

class DiskReserve {
 public:
  static constexpr int64_t kDefaultBytes = 32 << 20;
  // `path`: a file of traind's own (in the state directory). Made by Restore().
  explicit DiskReserve(std::string path, int64_t bytes = kDefaultBytes)
      : path_(std::move(path)), bytes_(bytes) {}

  // Gives the space back to the file system. True when there was a reserve to give.
  bool Release();
  // Makes the reserve if it is not there and the disk has room for it (allocated, not sparse);
  // false when it cannot (the disk is still full).
  bool Restore();
  bool held() const;

 private:
  const std::string path_;
  const int64_t bytes_;
  mutable absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace traind

#endif  // TRAIND_SERVER_DISK_RESERVE_H_
