#include "client/digest_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/write_all.h"

namespace traind {

namespace {

constexpr off_t kMaxCacheBytes = 1 << 20;  // about 10,000 files; then it starts afresh

std::string KeyOf(const struct stat& st) {
  return absl::StrCat(st.st_dev, " ", st.st_ino, " ", st.st_size, " ", st.st_mtim.tv_sec, ".",
                      st.st_mtim.tv_nsec);
}

// Whether `dir` is this user's own directory that nobody else can write: only then are its
// entries believed (a planted entry would make trainctl send someone else's digest for a file).
bool IsPrivateDir(const std::string& dir) {
  struct stat st;
  return lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
         (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

}  // namespace

absl::StatusOr<std::string> CachedSha256OfFile(const std::string& path,
                                               const std::string& cache_dir) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  const std::string key = KeyOf(st);
  const std::string cache = cache_dir + "/digests";
  std::string found;
  if (IsPrivateDir(cache_dir)) {
    std::ifstream in(cache);
    std::string line;
    while (std::getline(in, line)) {  // "DEV INO SIZE MTIME HEX"; the last match wins
      const size_t space = line.rfind(' ');
      if (space != std::string::npos && line.compare(0, space, key) == 0 &&
          line.size() - space - 1 == 64) {
        found = line.substr(space + 1);
      }
    }
  }
  if (!found.empty()) return found;
  absl::StatusOr<std::string> digest = Sha256OfFile(path);
  if (!digest.ok()) return digest;
  // Remember it; the file was not modified while it was read (else the entry would lie).
  struct stat after;
  if (stat(path.c_str(), &after) == 0 && KeyOf(after) == key) {
    mkdir(cache_dir.substr(0, cache_dir.rfind('/')).c_str(), 0700);
    mkdir(cache_dir.c_str(), 0700);
    if (!IsPrivateDir(cache_dir)) return digest;  // not ours: no cache, just the digest
    struct stat cache_st;
    const bool full = lstat(cache.c_str(), &cache_st) == 0 && cache_st.st_size > kMaxCacheBytes;
    // Never through a link: the file is written where it is, or not at all.
    const int fd =
        open(cache.c_str(),
             O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (full ? O_TRUNC : O_APPEND), 0600);
    if (fd >= 0) {
      const std::string line = absl::StrCat(key, " ", *digest, "\n");
      (void)WriteAll(fd, line);  // a cache entry that did not make it is just not cached
      close(fd);
    }
  }
  return digest;
}

}  // namespace traind
