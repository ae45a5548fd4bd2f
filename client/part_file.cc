#include "client/part_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "common/write_all.h"

namespace traind {

PartFile::PartFile(const std::string& output) {
  const size_t slash = output.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : output.substr(0, slash);
  const std::string base = slash == std::string::npos ? output : output.substr(slash + 1);
  std::string pattern = dir + "/." + base + ".XXXXXX";
  fd_ = mkstemp(pattern.data());
  if (fd_ >= 0) {
    path_ = pattern;
    const mode_t mask = umask(0);
    umask(mask);
    fchmod(fd_, 0666 & ~mask);  // what a plain create would give; mkstemp makes it 0600
  }
}

PartFile::~PartFile() {
  if (fd_ >= 0) close(fd_);
  if (!path_.empty()) unlink(path_.c_str());  // ours: created by the constructor
}

bool PartFile::Write(const std::string& bytes) { return WriteAll(fd_, bytes); }

absl::Status PartFile::KeepAs(const std::string& output, bool force) {
  const bool closed = close(fd_) == 0;
  fd_ = -1;
  if (!closed) {
    return absl::DataLossError(absl::StrCat("cannot write ", path_, ": ", std::strerror(errno)));
  }
  const absl::Status kept =
      CommitDurably(path_, output, force ? IfPresent::kReplace : IfPresent::kRefuse);
  path_.clear();  // CommitDurably removed it, or gave it its name
  if (absl::IsAlreadyExists(kept)) {
    return absl::AlreadyExistsError(
        absl::StrCat(output, " appeared meanwhile; --force overwrites it"));
  }
  return kept;
}

}  // namespace traind
