// FaultyFileOps (tests only): a FileOps whose chosen call fails, once, with a chosen errno, e.g.
// "the second fsync fails with EIO". Install it with ScopedFileOps.
#ifndef TRAIND_COMMON_FAULTY_FILE_OPS_H_
#define TRAIND_COMMON_FAULTY_FILE_OPS_H_

#include <cerrno>
#include <mutex>

#include "common/file_ops.h"

namespace traind {

class FaultyFileOps : public FileOps {
 public:
  enum class Call { kWrite, kFsync, kRename, kLink };

  // The (skip + 1)-th call of `call` from now on fails with `error`; the others go through.
  void FailOnce(Call call, int error, int skip = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    call_ = call, error_ = error, remaining_ = skip, armed_ = true;
  }
  // Whether the planned failure happened.
  bool failed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failed_;
  }

  ssize_t Write(int fd, const void* data, size_t size) override {
    return Fails(Call::kWrite) ? -1 : FileOps::Write(fd, data, size);
  }
  int Fsync(int fd) override { return Fails(Call::kFsync) ? -1 : FileOps::Fsync(fd); }
  int Rename(const char* from, const char* to) override {
    return Fails(Call::kRename) ? -1 : FileOps::Rename(from, to);
  }
  int Link(const char* from, const char* to) override {
    return Fails(Call::kLink) ? -1 : FileOps::Link(from, to);
  }

 private:
  // True (errno set) when this call is the one to fail.
  bool Fails(Call call) {
    int error = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!armed_ || call != call_ || remaining_-- > 0) return false;
      armed_ = false;
      failed_ = true;
      error = error_;
    }
    errno = error;
    return true;
  }

  mutable std::mutex mu_;
  Call call_ = Call::kWrite;
  int error_ = EIO;
  int remaining_ = 0;
  bool armed_ = false;
  bool failed_ = false;
};

}  // namespace traind

#endif  // TRAIND_COMMON_FAULTY_FILE_OPS_H_
