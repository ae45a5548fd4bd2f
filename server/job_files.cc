#include "server/job_files.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace traind {

namespace {

std::string JobDir(const std::string& jobs_dir, int64_t id) {
  return absl::StrCat(jobs_dir, "/", id);
}

// nftw's callbacks take no context; one walk at a time per thread.
thread_local int64_t walk_bytes = 0;

}  // namespace

int64_t JobDiskBytes(const std::string& jobs_dir, int64_t id) {
  walk_bytes = 0;
  nftw(
      JobDir(jobs_dir, id).c_str(),
      [](const char*, const struct stat* st, int type, struct FTW*) {
        if (type == FTW_F && S_ISREG(st->st_mode)) walk_bytes += st->st_size;
        return 0;
      },
      8, FTW_PHYS);
  return walk_bytes;
}

absl::Status RemoveJobFiles(const std::string& jobs_dir, int64_t id) {
  const std::string dir = JobDir(jobs_dir, id);
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return absl::OkStatus();
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is not a directory traind made; left alone"));
  }
  const int failed = nftw(
      dir.c_str(),
      [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }, 8,
      FTW_DEPTH | FTW_PHYS);
  if (failed != 0) {
    return absl::InternalError(absl::StrCat("cannot remove ", dir, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace traind
