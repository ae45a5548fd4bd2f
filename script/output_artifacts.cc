#include "script/output_artifacts.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/artifact_names.h"
#include "common/beneath.h"
#include "common/script_spec.h"
#include "common/sha256.h"
#include "script/output_lines.h"

namespace traind {

namespace {

constexpr int kMaxDepth = 32;

class Walk {
 public:
  Walk(const OutputLimits& limits, OutputArtifacts* found) : limits_(limits), found_(found) {}

  // `dir_fd` (borrowed) is the folder `prefix` names ("" for the top).
  void Folder(int dir_fd, const std::string& prefix, int depth) {
    bool cut_short = false;
    absl::StatusOr<std::vector<DirectoryEntry>> entries = ListDirectory(
        dir_fd, prefix, limits_.max_entries - std::min(limits_.max_entries, seen_), &cut_short);
    if (!entries.ok()) {
      Skip(prefix, "cannot be listed");
      return;
    }
    if (cut_short) ++found_->not_listed;  // at least one more, never looked at
    for (const DirectoryEntry& entry : *entries) {
      ++seen_;
      const std::string path = prefix.empty() ? entry.name : absl::StrCat(prefix, "/", entry.name);
      if (ValidUtf8(path) != path) {
        Skip(path, "the name is not UTF-8");
      } else if (path.size() > kMaxArtifactNameBytes || !ValidateScriptPath("path", path).ok()) {
        Skip(path.substr(0, 80), "the name is too long");
      } else if (entry.is_directory) {
        Subfolder(dir_fd, entry.name, path, depth);
      } else if (entry.is_regular) {
        File(dir_fd, entry.name, path);
      } else {
        Skip(path, entry.is_symlink ? "a symbolic link" : "not a plain file");
      }
    }
  }

 private:
  void Skip(const std::string& path, const std::string& why) {
    if (found_->skipped.size() < kMaxSkippedShown) {
      found_->skipped.push_back(absl::StrCat(ValidUtf8(path), " (", why, ")"));
    }
    ++found_->skipped_total;
  }

  void Subfolder(int dir_fd, const std::string& name, const std::string& path, int depth) {
    if (depth >= kMaxDepth) {
      Skip(path, absl::StrCat("folders deeper than ", kMaxDepth));
      return;
    }
    UniqueFd sub(openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.valid()) {
      Skip(path, "cannot be opened");
      return;
    }
    Folder(sub.get(), path, depth + 1);
  }

  void File(int dir_fd, const std::string& name, const std::string& path) {
    if (found_->files.size() >= limits_.max_files) {
      ++found_->not_listed;
      return;
    }
    // O_NONBLOCK: what was a file when listed may be a FIFO by now; the open must not wait.
    UniqueFd file(openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st;
    if (!file.valid() || fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      Skip(path, "not a plain file");
      return;
    }
    if (hashed_ + st.st_size > limits_.max_hashed_bytes) {
      ++found_->not_listed;
      return;
    }
    absl::StatusOr<FileDigest> digest = Sha256OfFd(file.get(), path);
    if (!digest.ok()) {
      Skip(path, "cannot be read");
      return;
    }
    hashed_ += digest->size_bytes;
    trainer::v1::Artifact artifact;
    artifact.set_name(path);
    artifact.set_format("file");
    artifact.set_size_bytes(digest->size_bytes);
    artifact.set_sha256(digest->hex_digest);
    found_->files.push_back(std::move(artifact));
  }

  const OutputLimits& limits_;
  OutputArtifacts* const found_;
  size_t seen_ = 0;     // entries looked at, in all folders
  int64_t hashed_ = 0;  // bytes read for digests
};

}  // namespace

absl::StatusOr<OutputArtifacts> CollectOutputArtifacts(const std::string& outputs_dir,
                                                       const OutputLimits& limits) {
  UniqueFd top(open(outputs_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top.valid()) {
    return absl::NotFoundError(
        absl::StrCat("the output directory cannot be opened: ", strerror(errno)));
  }
  OutputArtifacts found;
  Walk(limits, &found).Folder(top.get(), "", 0);
  return found;
}

}  // namespace traind
