#include "common/file_ops.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace traind {

ssize_t FileOps::Write(int fd, const void* data, size_t size) { return ::write(fd, data, size); }
int FileOps::Fsync(int fd) { return ::fsync(fd); }
int FileOps::Rename(const char* from, const char* to) { return std::rename(from, to); }
int FileOps::Link(const char* from, const char* to) { return ::link(from, to); }

namespace {

FileOps* SystemFileOps() {
  static FileOps* const system = new FileOps();
  return system;
}

std::atomic<FileOps*>& Current() {
  static std::atomic<FileOps*> current{SystemFileOps()};
  return current;
}

}  // namespace

FileOps& Files() { return *Current().load(std::memory_order_acquire); }

ScopedFileOps::ScopedFileOps(FileOps* ops)
    : previous_(Current().exchange(ops, std::memory_order_acq_rel)) {}

ScopedFileOps::~ScopedFileOps() { Current().store(previous_, std::memory_order_release); }

}  // namespace traind
