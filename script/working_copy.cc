#include "script/working_copy.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/errno_status.h"
#include "common/script_spec.h"
#include "common/status_macros.h"

namespace traind {

namespace {

// Copies `source` to a new file `target` (which must not exist), in the kernel where it can.
absl::Status CopyFile(const std::string& source, const std::string& target, bool executable) {
  const int in = open(source.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0) return Errno(absl::StrCat("cannot read the upload of ", target));
  const int out = open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       executable ? 0700 : 0600);
  if (out < 0) {
    close(in);
    return Errno(absl::StrCat("cannot create ", target));
  }
  absl::Status status;
  for (;;) {
    const ssize_t copied = copy_file_range(in, nullptr, out, nullptr, 1 << 30, 0);
    if (copied == 0) break;
    if (copied > 0) continue;
    if (errno == EINTR) continue;
    if (errno != EXDEV && errno != ENOSYS && errno != EOPNOTSUPP && errno != EINVAL) {
      status = Errno(absl::StrCat("cannot copy to ", target));
      break;
    }
    // Across file systems on older kernels: by hand.
    char buffer[1 << 16];
    ssize_t got;
    while ((got = read(in, buffer, sizeof(buffer))) > 0) {
      for (ssize_t done = 0; done < got;) {
        const ssize_t wrote = write(out, buffer + done, got - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote < 0) return close(in), close(out), Errno(absl::StrCat("cannot write ", target));
        done += wrote;
      }
    }
    if (got < 0) status = Errno(absl::StrCat("cannot read the upload of ", target));
    break;
  }
  close(in);
  if (close(out) != 0 && status.ok()) status = Errno(absl::StrCat("cannot write ", target));
  return status;
}

}  // namespace

absl::Status MakeWorkingCopy(
    const google::protobuf::RepeatedPtrField<trainer::v1::ScriptSource>& sources,
    const std::string& dir) {
  struct stat st;
  if (lstat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return absl::OkStatus();  // an earlier start's (or another rank's)
    return absl::InternalError(absl::StrCat(dir, " exists and is not a directory"));
  }
  const std::string building = absl::StrCat(dir, ".building-", getpid());
  std::error_code ignored;
  std::filesystem::remove_all(building, ignored);  // a crashed start's, with this pid
  if (mkdir(building.c_str(), 0700) != 0) return Errno(absl::StrCat("cannot create ", building));
  absl::Status status;
  for (const trainer::v1::ScriptSource& source : sources) {
    status = ValidateScriptPath("script file", source.path());
    if (!status.ok()) break;
    const std::filesystem::path target = std::filesystem::path(building) / source.path();
    // Every folder here was made by this call, in a directory only traind's user can enter: no
    // symlink can be among them.
    std::error_code error;
    std::filesystem::create_directories(target.parent_path(), error);
    if (error) {
      status = absl::InternalError(
          absl::StrCat("cannot create the folder of ", source.path(), ": ", error.message()));
      break;
    }
    status = CopyFile(source.source(), target.string(), source.executable());
    if (!status.ok()) break;
  }
  if (status.ok() &&
      renameat2(AT_FDCWD, building.c_str(), AT_FDCWD, dir.c_str(), RENAME_NOREPLACE) != 0 &&
      errno != EEXIST) {
    status = Errno(absl::StrCat("cannot move the working directory into place at ", dir));
  }
  std::filesystem::remove_all(building, ignored);  // when another rank's copy won, or on failure
  return status;
}

}  // namespace traind
