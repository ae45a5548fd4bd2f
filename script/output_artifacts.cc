#include "script/output_artifacts.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/beneath.h"
#include "common/script_spec.h"
#include "common/sha256.h"

namespace traind {

namespace {

constexpr int kMaxDepth = 32;

class Walk {
 public:
  Walk(size_t max_files, OutputArtifacts* found) : max_files_(max_files), found_(found) {}

  // `dir_fd` (borrowed) is the folder `prefix` names ("" for the top).
  void Folder(int dir_fd, const std::string& prefix, int depth) {
    absl::StatusOr<std::vector<DirectoryEntry>> entries = ListDirectory(dir_fd, prefix);
    if (!entries.ok()) {
      found_->skipped.push_back(absl::StrCat(prefix, " (cannot be listed)"));
      return;
    }
    for (const DirectoryEntry& entry : *entries) {
      const std::string path = prefix.empty() ? entry.name : absl::StrCat(prefix, "/", entry.name);
      if (!ValidateScriptPath("path", path).ok()) {
        found_->skipped.push_back(absl::StrCat(path.substr(0, 80), " (the name is too long)"));
      } else if (entry.is_directory) {
        Subfolder(dir_fd, entry.name, path, depth);
      } else if (entry.is_regular) {
        File(dir_fd, entry.name, path);
      } else {
        found_->skipped.push_back(
            absl::StrCat(path, entry.is_symlink ? " (a symbolic link)" : " (not a plain file)"));
      }
    }
  }

 private:
  void Subfolder(int dir_fd, const std::string& name, const std::string& path, int depth) {
    if (depth >= kMaxDepth) {
      found_->skipped.push_back(absl::StrCat(path, " (folders deeper than ", kMaxDepth, ")"));
      return;
    }
    UniqueFd sub(openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.valid()) {
      found_->skipped.push_back(absl::StrCat(path, " (cannot be opened)"));
      return;
    }
    Folder(sub.get(), path, depth + 1);
  }

  void File(int dir_fd, const std::string& name, const std::string& path) {
    if (found_->files.size() >= max_files_) {
      ++found_->not_listed;
      return;
    }
    // O_NONBLOCK: what was a file when listed may be a FIFO by now; the open must not wait.
    UniqueFd file(openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st;
    if (!file.valid() || fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      found_->skipped.push_back(absl::StrCat(path, " (not a plain file)"));
      return;
    }
    absl::StatusOr<FileDigest> digest = Sha256OfFd(file.get(), path);
    if (!digest.ok()) {
      found_->skipped.push_back(absl::StrCat(path, " (cannot be read)"));
      return;
    }
    trainer::v1::Artifact artifact;
    artifact.set_name(path);
    artifact.set_format("file");
    artifact.set_size_bytes(digest->size_bytes);
    artifact.set_sha256(digest->hex_digest);
    found_->files.push_back(std::move(artifact));
  }

  const size_t max_files_;
  OutputArtifacts* const found_;
};

}  // namespace

absl::StatusOr<OutputArtifacts> CollectOutputArtifacts(const std::string& outputs_dir,
                                                       size_t max_files) {
  UniqueFd top(open(outputs_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top.valid()) {
    return absl::NotFoundError(
        absl::StrCat("the output directory cannot be opened: ", strerror(errno)));
  }
  OutputArtifacts found;
  Walk(max_files, &found).Folder(top.get(), "", 0);
  return found;
}

}  // namespace traind
