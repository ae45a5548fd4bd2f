#include "server/owned_paths.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace traind {

namespace {

std::string KindOf(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return "a regular file";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  return "a device or other special file";
}

// Whether some process accepts connections on the socket at `path`.
bool SomeoneListens(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un address;
  std::memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  const bool connected = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  const int error = errno;
  close(fd);
  // EAGAIN: a listener whose backlog is full is still a listener.
  return connected || error == EAGAIN;
}

}  // namespace

absl::Status PreparePrivateDir(const std::string& dir) {
  // Parents are created the ordinary way (they are not traind's to restrict); the directory
  // itself with 0700, so nothing is ever chmodded.
  std::error_code error;
  const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, error);
  if (mkdir(dir.c_str(), 0700) == 0) return absl::OkStatus();
  if (errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create state directory ", dir, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create state directory ", dir, ": ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("state directory ", dir, " is ", KindOf(st), ", not a directory"));
  }
  if (st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "state directory ", dir, " belongs to uid ", st.st_uid, ", not to this user (uid ",
        geteuid(), "): choose a directory of your own (--state-dir)"));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("state directory ", dir, " can be written by other users (mode ",
                     absl::StrFormat("%04o", st.st_mode & 07777),
                     "); traind keeps its database and socket there: `chmod 700 ", dir,
                     "` or choose another --state-dir"));
  }
  return absl::OkStatus();
}

absl::Status ClaimSocketPath(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("listen: cannot examine ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "listen: ", path, " is ", KindOf(st),
        ", not a socket; traind removes only a stale socket of its own there. Choose another "
        "path, or move that file away yourself"));
  }
  if (st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat("listen: ", path, " is a socket of uid ",
                                                      st.st_uid,
                                                      ", not of this user; traind will "
                                                      "not remove it"));
  }
  if (SomeoneListens(path)) {
    return absl::FailedPreconditionError(
        absl::StrCat("listen: another process is listening on ", path,
                     " (another traind? `trainctl --addr unix:", path, " queue` asks it)"));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(
        absl::StrCat("listen: cannot remove the stale socket ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<BoundSocket> AdoptBoundSocket(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("listen: ", path, " is not the socket traind just bound"));
  }
  // The directory rules out a swap between lstat and chmod: it is traind's own 0700 state
  // directory, or one the caller chose (a sticky /tmp keeps others from replacing our socket).
  if ((st.st_mode & 077) != 0 && chmod(path.c_str(), 0600) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("listen: cannot restrict ", path, ": ", std::strerror(errno)));
  }
  if (lstat(path.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("listen: ", path, " vanished"));
  }
  return BoundSocket{path, st.st_dev, st.st_ino, st.st_ctim};
}

void RemoveBoundSocket(const BoundSocket& socket) {
  struct stat st;
  if (lstat(socket.path.c_str(), &st) != 0) return;
  if (!S_ISSOCK(st.st_mode) || st.st_dev != socket.device || st.st_ino != socket.inode ||
      st.st_ctim.tv_sec != socket.change_time.tv_sec ||
      st.st_ctim.tv_nsec != socket.change_time.tv_nsec) {
    return;
  }
  unlink(socket.path.c_str());
}

}  // namespace traind
