// Opening files beneath a directory so that neither `..` nor a symbolic link leads out of it,
// even when the path changes between a check and the open. This is what keeps a job's data
// inside the daemon's data roots: traind checks a job's paths when it is submitted
// (server/trainer_service.cc), and the worker opens every data file through here when the job
// starts, retries or resumes (data/), so a path swapped for a symlink while the job waited is
// refused where it is read. No LibTorch, no std::filesystem (the worker links this; see
// common/temp_dir_for_tests.h). Thread-safe: no shared state.
//
// What is followed: a symbolic link is followed only while it stays inside the root being walked.
// A relative link whose `..` would climb above the root, or an absolute link to a path not
// lexically under the root, is refused without looking at its target, so the answer says nothing
// about what lies outside. An absolute link to a path under the same root is followed (from the
// root): a dataset of links into an image pool of the same root works. A link into another root
// is refused: each path is walked beneath the one root it lies under. Known limit: a root that is
// itself reached through a symlink (--data-root /data, which leads to /mnt/data) is walked under
// its resolved name once admitted, so absolute links inside it must spell that name
// (/mnt/data/...); relative links work either way.
//
// How: on Linux >= 5.6 one openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) call. Where that
// says no (it never follows absolute links) or is missing (older kernels, seccomp filters that
// answer ENOSYS or EPERM, macOS), a walk one name at a time: openat(O_NOFOLLOW) from the root's
// descriptor, links read with readlinkat and spliced in, `..` taken off a stack of descriptors
// and never handed to the kernel. Both give the same answers (beneath_test.cc checks each).
//
// Not covered: a directory moved out of the root by someone who can write both places while it
// is being walked (that someone could as well have moved the data in); bind mounts inside a root
// (the root's owner put them there).
//
// Error codes: PERMISSION_DENIED means only "outside the roots" (lexically, or through a link or
// `..`); NOT_FOUND a missing name or a name that is not a directory where one is needed;
// FAILED_PRECONDITION a file the process may not read (EACCES) or a link loop; others as errno
// says. Messages name the path as given (never a root the caller did not name) and end with the
// reason.
#ifndef TRAIND_COMMON_BENEATH_H_
#define TRAIND_COMMON_BENEATH_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace traind {

// Owns one file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = other.Release();
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // The descriptor, now the caller's to close.
  int Release() { return std::exchange(fd_, -1); }
  void Reset();

 private:
  int fd_ = -1;
};

// `path` made absolute (against the working directory when relative) with empty and "." names
// dropped and each ".." taking away the name before it (none above "/"), without looking at the
// file system: "/data/a/../b/" is "/data/b". Note: where "a" is a symlink the kernel would read
// "a/.." differently; callers that normalize first and then open beneath a root get this meaning,
// which can only stay inside the root.
std::string LexicallyNormal(absl::string_view path);

// Whether `path` is `root` or lies under it, by name only (both lexically normal and absolute).
bool IsLexicallyUnder(absl::string_view path, absl::string_view root);

// Opens `relative` (names relative to `root`; empty or "." is the root itself) beneath `root`
// with `flags` (O_RDONLY, O_DIRECTORY, O_NONBLOCK ...; O_CLOEXEC is added; no O_CREAT). Links
// are resolved as this file's comment says; `root` itself is opened as given (the daemon's
// operator chose it, links and all). Messages name the path as root/relative.
absl::StatusOr<UniqueFd> OpenBeneath(const std::string& root, const std::string& relative,
                                     int flags);

// The portable walk OpenBeneath falls back to, exposed so tests can check it where openat2 works.
absl::StatusOr<UniqueFd> OpenBeneathByWalk(const std::string& root, const std::string& relative,
                                           int flags);

// A set of roots that absolute paths are opened beneath (WorkerRequest.data_roots, the daemon's
// --data-root directories). Each path is opened beneath the root it lies under by name (the
// widest, where roots nest). With no roots at all nothing is confined: paths are opened as given,
// for unit tests and tools run by hand. Copyable; thread-compatible.
class BeneathRoots {
 public:
  BeneathRoots() = default;  // unconfined
  // Lexically normalized here; a root that does not exist is kept (a path under it is NOT_FOUND).
  explicit BeneathRoots(const std::vector<std::string>& roots);

  bool confined() const { return !roots_.empty(); }
  const std::vector<std::string>& roots() const { return roots_; }
  // Whether `path` (absolute) lies under a root by name; always true when unconfined.
  bool Contains(const std::string& path) const;

  // Opens `path` beneath its root (see OpenBeneath); PERMISSION_DENIED "PATH: outside the
  // daemon's data roots" when it lies under none, the same words as for one that leads out.
  absl::StatusOr<UniqueFd> Open(const std::string& path, int flags) const;
  // A directory, for listing and for openat.
  absl::StatusOr<UniqueFd> OpenDirectory(const std::string& path) const;
  // A regular file, read-only. A FIFO or device is NOT_FOUND "not a regular file" without the
  // open blocking on it (O_NONBLOCK, cleared once it is known to be a file).
  absl::StatusOr<UniqueFd> OpenFile(const std::string& path) const;

 private:
  std::vector<std::string> roots_;  // lexically normal, absolute
};

// One entry of a directory, as the directory itself says (the type is lstat's: a symlink is a
// symlink, not what it points to).
struct DirectoryEntry {
  std::string name;
  bool is_directory = false;
  bool is_regular = false;
  bool is_symlink = false;
};

// The entries of the open directory `dir_fd` (borrowed; read through a duplicate, so `dir_fd`
// stays usable), without "." and "..", sorted by name. `shown` names it in messages. At most
// `max_entries` (in the directory's own order, then sorted): `cut_short`, when given, says
// whether there were more.
absl::StatusOr<std::vector<DirectoryEntry>> ListDirectory(int dir_fd, const std::string& shown,
                                                          size_t max_entries = SIZE_MAX,
                                                          bool* cut_short = nullptr);

// Everything `fd` (borrowed) reads from its current offset to the end.
absl::StatusOr<std::vector<char>> ReadAll(int fd, const std::string& shown);

// The path the open `fd` was reached by, as the kernel names it (Linux /proc/self/fd, macOS
// F_GETPATH); UNIMPLEMENTED elsewhere. For recording where an opened file really is.
absl::StatusOr<std::string> PathOfFd(int fd);

}  // namespace traind

#endif  // TRAIND_COMMON_BENEATH_H_
