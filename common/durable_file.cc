#include "common/durable_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "common/file_ops.h"
#include "common/write_all.h"

namespace traind {

namespace {

absl::Status CannotWrite(const std::string& path, int error) {
  const std::string message = absl::StrCat("cannot write ", path, ": ", std::strerror(error));
  switch (error) {
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    default:
      return absl::InternalError(message);
  }
}

// WriteDurably's temporary names: "." + the file's name + kTemporaryMark + mkstemp's 6 characters.
constexpr char kTemporaryMark[] = ".tmp-";
constexpr size_t kUniqueChars = 6;
constexpr int64_t kStaleAfterSeconds = 10;

bool IsTemporaryName(absl::string_view name) {
  const size_t mark = sizeof(kTemporaryMark) - 1;
  return name.size() > 1 + mark + kUniqueChars && name.front() == '.' &&
         name.substr(name.size() - kUniqueChars - mark, mark) == kTemporaryMark;
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash + 1);
}

// Returns errno of the failing call, 0 when the file is on disk.
int FsyncFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int error = Files().Fsync(fd) == 0 ? 0 : errno;
  close(fd);
  return error;
}

// Takes `path`'s name for `temp`; returns errno of the failing call, 0 on success.
int Move(const std::string& temp, const std::string& path, IfPresent if_present) {
  if (if_present == IfPresent::kReplace) {
    return Files().Rename(temp.c_str(), path.c_str()) == 0 ? 0 : errno;
  }
  if (Files().Link(temp.c_str(), path.c_str()) != 0) return errno;
  unlink(temp.c_str());
  return 0;
}

// mkstemp's template for a temporary file beside `path`: ".NAME.tmp-XXXXXX".
std::string TemporaryTemplate(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return DirectoryOf(path) + "." + base + kTemporaryMark + std::string(kUniqueChars, 'X');
}

}  // namespace

absl::Status CommitDurably(const std::string& temp, const std::string& path, IfPresent if_present,
                           const std::string& named) {
  int error = FsyncFile(temp);
  if (error == 0) error = Move(temp, path, if_present);
  if (error != 0) {
    unlink(temp.c_str());  // ours; what was at `path` before stays as it was
    return CannotWrite(named.empty() ? path : named, error);
  }
  // Best effort: some file systems refuse fsync on a directory, and the file is whole either way.
  if (const int dir = open(DirectoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      dir >= 0) {
    Files().Fsync(dir);
    close(dir);
  }
  return absl::OkStatus();
}

absl::Status WriteDurably(const std::string& path,
                          const std::function<absl::Status(const std::string& temp)>& write,
                          const std::string& named) {
  std::string temp = TemporaryTemplate(path);
  const int fd = mkstemp(temp.data());
  if (fd < 0) return CannotWrite(named.empty() ? path : named, errno);
  // Locked until the file has its name or is gone: RemoveStaleTemporaries leaves a locked one be,
  // for its writer is alive (a worker the daemon's crash orphaned, writing its last checkpoint).
  flock(fd, LOCK_EX);
  absl::Status status = write(temp);
  if (status.ok()) {
    status = CommitDurably(temp, path, IfPresent::kReplace, named);
  } else {
    unlink(temp.c_str());
  }
  close(fd);
  return status;
}

int RemoveStaleTemporaries(const std::string& dir) {
  DIR* entries = opendir(dir.c_str());
  if (entries == nullptr) return 0;
  int removed = 0;
  while (const dirent* entry = readdir(entries)) {
    if (!IsTemporaryName(entry->d_name)) continue;
    const int fd =
        openat(dirfd(entries), entry->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    // A writer still alive holds its lock; one that has only just made its file may not have
    // taken it yet, but its file is young.
    struct stat st;
    const bool stale = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                       time(nullptr) - st.st_mtime >= kStaleAfterSeconds &&
                       flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (stale && unlinkat(dirfd(entries), entry->d_name, 0) == 0) ++removed;
    close(fd);
  }
  closedir(entries);
  return removed;
}

absl::StatusOr<std::string> StageFileDurably(const std::string& path, absl::string_view contents,
                                             const std::string& named) {
  std::string temp = TemporaryTemplate(path);
  const int fd = mkstemp(temp.data());
  if (fd < 0) return CannotWrite(named.empty() ? path : named, errno);
  const bool written = WriteAll(fd, contents) && Files().Fsync(fd) == 0;
  const int error = errno;
  close(fd);
  if (!written) {
    unlink(temp.c_str());
    return CannotWrite(named.empty() ? path : named, error);
  }
  return temp;
}

absl::Status WriteFileDurably(const std::string& path, absl::string_view contents,
                              const std::string& named) {
  return WriteDurably(
      path,
      [&](const std::string& temp) {
        const int fd = open(temp.c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
        const bool written = fd >= 0 && WriteAll(fd, contents);
        const int error = errno;
        if (fd >= 0) close(fd);
        return written ? absl::OkStatus() : CannotWrite(named.empty() ? path : named, error);
      },
      named);
}

}  // namespace traind
