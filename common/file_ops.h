// FileOps: the system calls that make a file durable (write, fsync, rename, link), behind one
// seam. Everything traind, its worker and trainctl persist and must not half-write (uploaded
// blobs, checkpoints and artifacts, downloads and exports) goes through Files(), so a test can
// make any of those calls fail in-process (FaultyFileOps) and check what the caller does:
// report the real cause, keep what was there before, leave no partial file under the final name.
// SQLite's own writes go through its VFS instead (server/store.cc).
#ifndef TRAIND_COMMON_FILE_OPS_H_
#define TRAIND_COMMON_FILE_OPS_H_

#include <sys/types.h>

#include <cstddef>

namespace traind {

class FileOps {
 public:
  virtual ~FileOps() = default;
  // As the system calls: -1 with errno set on failure.
  virtual ssize_t Write(int fd, const void* data, size_t size);
  virtual int Fsync(int fd);
  virtual int Rename(const char* from, const char* to);
  virtual int Link(const char* from, const char* to);
};

// The process's FileOps: the system's, unless a test installed another.
FileOps& Files();

// Tests: `ops` serves Files() while this object lives (install before starting threads that
// write; the previous one is restored on destruction).
class ScopedFileOps {
 public:
  explicit ScopedFileOps(FileOps* ops);
  ~ScopedFileOps();
  ScopedFileOps(const ScopedFileOps&) = delete;
  ScopedFileOps& operator=(const ScopedFileOps&) = delete;

 private:
  FileOps* previous_;
};

}  // namespace traind

#endif  // TRAIND_COMMON_FILE_OPS_H_
