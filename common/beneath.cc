#include "common/beneath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#if defined(__linux__)
#include <sys/syscall.h>
#if defined(SYS_openat2) && __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define TRAIND_HAVE_OPENAT2 1
#endif
#endif

namespace traind {

namespace {

constexpr int kMaxLinks = 40;  // the kernel's own limit (MAXSYMLINKS)

// Directories on the way are opened only to walk through: O_PATH where there is one, so a
// directory that may be searched but not listed (mode 711) can be passed as the kernel would.
#ifdef O_PATH
constexpr int kWalkFlags = O_PATH | O_DIRECTORY | O_CLOEXEC;
#else
constexpr int kWalkFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
#endif

std::string Shown(const std::string& root, const std::string& relative) {
  if (relative.empty() || relative == ".") return root;
  return absl::StrCat(root == "/" ? "" : root, "/", relative);
}

absl::Status Outside(const std::string& shown) {
  return absl::PermissionDeniedError(absl::StrCat(
      shown, " is outside the daemon's data roots (no symbolic link or '..' may lead out of one)"));
}

absl::Status FromErrno(int error, const std::string& shown) {
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(absl::StrCat(shown, ": no such file or directory"));
    case ENOTDIR:
      return absl::NotFoundError(absl::StrCat(shown, ": not a directory"));
    case EACCES:
    case EPERM:
      return absl::FailedPreconditionError(
          absl::StrCat(shown, ": permission denied (the daemon's user cannot read it)"));
    case ELOOP:
      return absl::FailedPreconditionError(
          absl::StrCat(shown, ": too many levels of symbolic links"));
    default:
      return absl::UnknownError(absl::StrCat(shown, ": ", std::strerror(error)));
  }
}

// The names of `path` in order, "" and "." dropped; ".." kept (the walk decides what it means).
std::deque<std::string> Names(absl::string_view path) {
  std::deque<std::string> names;
  for (absl::string_view name : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (name != ".") names.emplace_back(name);
  }
  return names;
}

// The text of the symlink `name` in `dir_fd`; false when it is not a symlink (or is gone).
bool ReadLinkAt(int dir_fd, const std::string& name, std::string* target) {
  std::string buffer(256, '\0');
  while (true) {
    const ssize_t n = readlinkat(dir_fd, name.c_str(), buffer.data(), buffer.size());
    if (n < 0) return false;
    if (static_cast<size_t>(n) < buffer.size()) {
      buffer.resize(static_cast<size_t>(n));
      *target = std::move(buffer);
      return true;
    }
    if (buffer.size() >= (1u << 16)) return false;  // longer than PATH_MAX allows
    buffer.resize(buffer.size() * 2);
  }
}

// `relative` beneath the open `root_fd`, one name at a time (the file comment says how).
absl::StatusOr<UniqueFd> Walk(int root_fd, const std::string& root, const std::string& relative,
                              int flags) {
  const std::string shown = Shown(root, relative);
  const std::string root_name = LexicallyNormal(root);
  std::vector<UniqueFd> dirs;  // dirs.back(): where the next name is looked up; empty: the root
  auto here = [&] { return dirs.empty() ? root_fd : dirs.back().get(); };
  std::deque<std::string> names = Names(relative);
  int links = 0;
  while (!names.empty()) {
    const std::string name = std::move(names.front());
    names.pop_front();
    if (name == "..") {
      if (dirs.empty()) return Outside(shown);
      dirs.pop_back();
      continue;
    }
    const bool last = names.empty();
    const int fd =
        openat(here(), name.c_str(), (last ? flags | O_CLOEXEC : kWalkFlags) | O_NOFOLLOW);
    if (fd >= 0) {
      if (last) return UniqueFd(fd);
      dirs.emplace_back(fd);
      continue;
    }
    // O_NOFOLLOW refuses a link (ELOOP on Linux and macOS, other codes elsewhere): ask directly.
    const int open_error = errno;
    std::string target;
    if (!ReadLinkAt(here(), name, &target)) return FromErrno(open_error, shown);
    if (++links > kMaxLinks) return FromErrno(ELOOP, shown);
    std::deque<std::string> spliced;
    if (!target.empty() && target[0] == '/') {
      // Judged by its text alone: whatever is (or is not) at an outside target stays unseen.
      const std::string absolute = LexicallyNormal(target);
      if (!IsLexicallyUnder(absolute, root_name)) return Outside(shown);
      dirs.clear();
      spliced = Names(absl::string_view(absolute).substr(root_name.size()));
    } else {
      spliced = Names(target);
    }
    names.insert(names.begin(), spliced.begin(), spliced.end());
  }
  // Ended on a directory reached by `..` or a link (or the root itself): open it as asked.
  const int fd = openat(here(), ".", flags | O_CLOEXEC);
  if (fd < 0) return FromErrno(errno, shown);
  return UniqueFd(fd);
}

absl::StatusOr<UniqueFd> OpenRoot(const std::string& root, const std::string& shown) {
  if (root.empty() || root[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(shown, ": the root must be an absolute path"));
  }
  const int fd = open(root.c_str(), kWalkFlags);
  if (fd < 0) return FromErrno(errno, shown);
  return UniqueFd(fd);
}

}  // namespace

void UniqueFd::Reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

std::string LexicallyNormal(absl::string_view path) {
  std::string absolute;
  if (path.empty() || path[0] != '/') {
    char cwd[4096];
    absolute = absl::StrCat(getcwd(cwd, sizeof cwd) != nullptr ? cwd : "", "/", path);
  } else {
    absolute = std::string(path);
  }
  std::vector<std::string> kept;
  for (absl::string_view name : absl::StrSplit(absolute, '/', absl::SkipEmpty())) {
    if (name == ".") continue;
    if (name == "..") {
      if (!kept.empty()) kept.pop_back();
      continue;
    }
    kept.emplace_back(name);
  }
  std::string normal;
  for (const std::string& name : kept) absl::StrAppend(&normal, "/", name);
  return normal.empty() ? "/" : normal;
}

bool IsLexicallyUnder(absl::string_view path, absl::string_view root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  return path == root || (path.size() > root.size() && path.substr(0, root.size()) == root &&
                          path[root.size()] == '/');
}

absl::StatusOr<UniqueFd> OpenBeneathByWalk(const std::string& root, const std::string& relative,
                                           int flags) {
  const std::string shown = Shown(root, relative);
  absl::StatusOr<UniqueFd> root_fd = OpenRoot(root, shown);
  if (!root_fd.ok()) return root_fd.status();
  return Walk(root_fd->get(), root, relative, flags);
}

absl::StatusOr<UniqueFd> OpenBeneath(const std::string& root, const std::string& relative,
                                     int flags) {
  const std::string shown = Shown(root, relative);
  absl::StatusOr<UniqueFd> root_fd = OpenRoot(root, shown);
  if (!root_fd.ok()) return root_fd.status();
#ifdef TRAIND_HAVE_OPENAT2
  struct open_how how;
  std::memset(&how, 0, sizeof how);
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  const std::string names = relative.empty() ? "." : relative;
  const long fd = syscall(SYS_openat2, root_fd->get(), names.c_str(), &how, sizeof how);
  if (fd >= 0) return UniqueFd(static_cast<int>(fd));
  switch (errno) {
    // EXDEV: a link or `..` it will not follow (absolute links never), which the walk judges;
    // EAGAIN: a rename raced a `..`; ENOSYS, EPERM, EINVAL, E2BIG: no openat2 here (old kernel,
    // seccomp, unknown flags); ELOOP: too many links, or a magic link: the walk says which.
    case EXDEV:
    case EAGAIN:
    case ENOSYS:
    case EPERM:
    case EINVAL:
    case E2BIG:
    case ELOOP:
      break;
    default:
      return FromErrno(errno, shown);
  }
#endif
  return Walk(root_fd->get(), root, relative, flags);
}

BeneathRoots::BeneathRoots(const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    if (!root.empty()) roots_.push_back(LexicallyNormal(root));
  }
  // Widest first: where roots nest, a link may go anywhere inside the outer one.
  std::sort(roots_.begin(), roots_.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  roots_.erase(std::unique(roots_.begin(), roots_.end()), roots_.end());
}

bool BeneathRoots::Contains(const std::string& path) const {
  if (!confined()) return true;
  const std::string normal = LexicallyNormal(path);
  return std::any_of(roots_.begin(), roots_.end(),
                     [&](const std::string& root) { return IsLexicallyUnder(normal, root); });
}

absl::StatusOr<UniqueFd> BeneathRoots::Open(const std::string& path, int flags) const {
  if (!confined()) {
    const int fd = open(path.c_str(), flags | O_CLOEXEC);
    if (fd < 0) return FromErrno(errno, path);
    return UniqueFd(fd);
  }
  const std::string normal = LexicallyNormal(path);
  for (const std::string& root : roots_) {
    if (!IsLexicallyUnder(normal, root)) continue;
    // What follows the root and its "/" ("/" itself is the root's only "/").
    const size_t skip = root == "/" ? 1 : root.size() + 1;
    absl::StatusOr<UniqueFd> opened =
        OpenBeneath(root, normal.substr(std::min(normal.size(), skip)), flags);
    if (!opened.ok() && opened.status().code() == absl::StatusCode::kPermissionDenied) {
      return Outside(path);  // in the caller's words, not the root's
    }
    return opened;
  }
  return Outside(path);
}

absl::StatusOr<UniqueFd> BeneathRoots::OpenDirectory(const std::string& path) const {
  return Open(path, O_RDONLY | O_DIRECTORY);
}

absl::StatusOr<UniqueFd> BeneathRoots::OpenFile(const std::string& path) const {
  absl::StatusOr<UniqueFd> opened = Open(path, O_RDONLY | O_NONBLOCK);
  if (!opened.ok()) return opened.status();
  struct stat st;
  if (fstat(opened->get(), &st) != 0) return FromErrno(errno, path);
  if (!S_ISREG(st.st_mode)) return absl::NotFoundError(absl::StrCat(path, ": not a regular file"));
  const int status_flags = fcntl(opened->get(), F_GETFL);
  if (status_flags >= 0) (void)fcntl(opened->get(), F_SETFL, status_flags & ~O_NONBLOCK);
  return opened;
}

absl::StatusOr<std::vector<DirectoryEntry>> ListDirectory(int dir_fd, const std::string& shown,
                                                          size_t max_entries, bool* cut_short) {
  if (cut_short != nullptr) *cut_short = false;
  // fdopendir takes the descriptor over: give it a duplicate opened afresh at the start.
  const int own = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (own < 0) return FromErrno(errno, shown);
  std::unique_ptr<DIR, int (*)(DIR*)> dir(fdopendir(own), closedir);
  if (dir == nullptr) {
    const int error = errno;
    close(own);
    return FromErrno(error, shown);
  }
  std::vector<DirectoryEntry> entries;
  while (true) {
    errno = 0;
    const dirent* entry = readdir(dir.get());
    if (entry == nullptr) {
      if (errno != 0) return FromErrno(errno, shown);
      break;
    }
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (entries.size() >= max_entries) {
      if (cut_short != nullptr) *cut_short = true;
      break;
    }
    struct stat st;
    // lstat's answer: d_type is DT_UNKNOWN on some file systems.
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
    entries.push_back(
        DirectoryEntry{name, S_ISDIR(st.st_mode), S_ISREG(st.st_mode), S_ISLNK(st.st_mode)});
  }
  std::sort(entries.begin(), entries.end(),
            [](const DirectoryEntry& a, const DirectoryEntry& b) { return a.name < b.name; });
  return entries;
}

absl::StatusOr<std::vector<char>> ReadAll(int fd, const std::string& shown) {
  std::vector<char> bytes;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    bytes.reserve(static_cast<size_t>(st.st_size));
  }
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return FromErrno(errno, shown);
    }
    if (n == 0) return bytes;
    bytes.insert(bytes.end(), buffer, buffer + n);
  }
}

absl::StatusOr<std::string> PathOfFd(int fd) {
#if defined(__linux__)
  std::string target;
  const std::string link = absl::StrCat("/proc/self/fd/", fd);
  if (ReadLinkAt(AT_FDCWD, link, &target) && !target.empty() && target[0] == '/') return target;
  return absl::UnavailableError(absl::StrCat("cannot read ", link));
#elif defined(F_GETPATH)
  char path[4096];  // MAXPATHLEN on macOS is 1024
  if (fcntl(fd, F_GETPATH, path) == 0) return std::string(path);
  return absl::UnavailableError(absl::StrCat("F_GETPATH: ", std::strerror(errno)));
#else
  (void)fd;
  return absl::UnimplementedError("no way to name an open file on this system");
#endif
}

}  // namespace traind
