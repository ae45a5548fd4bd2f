#include "engine/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/file_ops.h"

namespace traind {

absl::Status WriteDurably(const std::function<void(const std::string&)>& write,
                          const std::string& path) {
  const std::string temp = path + ".tmp";
  write(temp);
  const int fd = open(temp.c_str(), O_RDONLY | O_CLOEXEC);
  const bool synced = fd >= 0 && Files().Fsync(fd) == 0;
  const int sync_error = errno;
  if (fd >= 0) close(fd);
  if (!synced || Files().Rename(temp.c_str(), path.c_str()) != 0) {
    const int error = synced ? errno : sync_error;
    unlink(temp.c_str());  // ours; what was at `path` before stays as it was
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(error)));
  }
  const std::string dir = path.substr(0, path.rfind('/') + 1);
  if (const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    Files().Fsync(dir_fd);
    close(dir_fd);
  }
  return absl::OkStatus();
}

}  // namespace traind
