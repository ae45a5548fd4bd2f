#include "server/disk_reserve.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace traind {

namespace {

// `bytes` allocated to `fd`: posix_fallocate where the file system has it, else written zeros
// (allocation, not a sparse file's promise, is what keeps the space).
bool Allocate(int fd, int64_t bytes) {
  const int allocated = posix_fallocate(fd, 0, bytes);
  if (allocated == 0) return true;
  if (allocated != EOPNOTSUPP && allocated != EINVAL) return false;  // ENOSPC, EFBIG, ...
  const std::vector<char> zeros(1 << 16, 0);
  for (int64_t written = 0; written < bytes;) {
    const ssize_t n = write(fd, zeros.data(), zeros.size());
    if (n <= 0) return false;
    written += n;
  }
  return fsync(fd) == 0;
}

}  // namespace

bool DiskReserve::Release() {
  absl::MutexLock lock(&mu_);
  if (!held_) return false;
  held_ = false;
  return unlink(path_.c_str()) == 0;
}

bool DiskReserve::Restore() {
  absl::MutexLock lock(&mu_);
  if (held_) return true;
  const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool allocated = Allocate(fd, bytes_);
  close(fd);
  if (!allocated) {
    unlink(path_.c_str());  // a part of it would only take space nobody can use
    return false;
  }
  held_ = true;
  return true;
}

bool DiskReserve::held() const {
  absl::MutexLock lock(&mu_);
  return held_;
}

}  // namespace traind
