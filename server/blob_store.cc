#include "server/blob_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "common/file_ops.h"
#include "common/job_spec.h"
#include "common/status_macros.h"
#include "common/write_all.h"

namespace traind {

namespace {

absl::Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) {
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(path, " exists and is not a directory"));
  }
  return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
}

constexpr size_t kMaxNameLength = 256;

}  // namespace

absl::StatusOr<std::unique_ptr<BlobStore>> BlobStore::Open(const std::string& dir) {
  RETURN_IF_ERROR(MakeDir(dir));
  RETURN_IF_ERROR(MakeDir(dir + "/sha256"));
  RETURN_IF_ERROR(MakeDir(dir + "/incoming"));
  // What a crash left half-written: never content, only temporary files we created (uploads in
  // incoming/, a description's beside it: hidden names, common/durable_file.h).
  for (const auto& [folder, prefix] : {std::pair{"/incoming/", "upload-"}, {"/sha256/", "."}}) {
    if (DIR* leftovers = opendir((dir + folder).c_str())) {
      while (const dirent* entry = readdir(leftovers)) {
        const std::string name = entry->d_name;
        if (name.rfind(prefix, 0) == 0 && name != "." && name != "..") {
          unlink((dir + folder + name).c_str());
        }
      }
      closedir(leftovers);
    }
  }
  std::unique_ptr<BlobStore> store(new BlobStore(dir));
  store->IndexOwners();
  return store;
}

void BlobStore::IndexOwners() {
  absl::MutexLock lock(&describe_mu_);
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir((dir_ + "/sha256").c_str()), closedir);
  if (!dir) return;
  while (const dirent* entry = readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (name.size() != 64 + 5 || name.compare(64, 5, ".blob") != 0) continue;
    absl::StatusOr<trainer::v1::Blob> blob = Get("sha256:" + name.substr(0, 64));
    if (!blob.ok()) continue;
    for (const std::string& owner : blob->owners()) bytes_by_owner_[owner] += blob->size_bytes();
  }
}

std::string BlobStore::PathOf(const std::string& digest) const {
  return absl::StrCat(dir_, "/sha256/", digest.substr(digest.find(':') + 1));
}

absl::StatusOr<trainer::v1::Blob> BlobStore::Get(const std::string& digest) const {
  RETURN_IF_ERROR(ValidateBlobDigest("digest", digest));
  const std::string path = PathOf(digest);
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::NotFoundError(absl::StrCat("blob ", digest, " is not stored on this daemon"));
  }
  trainer::v1::Blob blob;
  std::ifstream description(path + ".blob", std::ios::binary);
  if (description) {
    std::stringstream bytes;
    bytes << description.rdbuf();
    (void)blob.ParseFromString(bytes.str());
  }
  blob.set_digest(digest);
  blob.set_size_bytes(st.st_size);
  if (blob.owners().empty() && !blob.owner().empty()) blob.add_owners(blob.owner());  // before v5
  return blob;
}

bool IsBlobOwner(const trainer::v1::Blob& blob, const std::string& owner) {
  return std::find(blob.owners().begin(), blob.owners().end(), owner) != blob.owners().end();
}

absl::Status BlobStore::WriteDescription(const trainer::v1::Blob& blob) const {
  // Durable before it takes its name: a crash must not leave an empty description in place.
  return WriteFileDurably(PathOf(blob.digest()) + ".blob", blob.SerializeAsString(),
                          "the description of " + blob.digest());
}

absl::StatusOr<bool> BlobStore::Release(const std::string& digest, const std::string& owner) {
  absl::MutexLock lock(&describe_mu_);
  absl::StatusOr<trainer::v1::Blob> blob = Get(digest);
  if (absl::IsNotFound(blob.status())) return true;  // gone already
  if (!blob.ok()) return blob.status();
  std::vector<std::string> others;
  for (const std::string& o : blob->owners()) {
    if (o != owner) others.push_back(o);
  }
  if (IsBlobOwner(*blob, owner)) bytes_by_owner_[owner] -= blob->size_bytes();
  if (others.empty()) {
    RETURN_IF_ERROR(Remove(digest));
    return true;
  }
  blob->clear_owners();
  for (const std::string& o : others) blob->add_owners(o);
  RETURN_IF_ERROR(WriteDescription(*blob));
  return false;
}

int64_t BlobStore::BytesOwnedBy(const std::string& owner) const {
  absl::MutexLock lock(&describe_mu_);
  const auto found = bytes_by_owner_.find(owner);
  return found == bytes_by_owner_.end() ? 0 : found->second;
}

absl::Status BlobStore::Remove(const std::string& digest) {
  RETURN_IF_ERROR(ValidateBlobDigest("digest", digest));
  const std::string path = PathOf(digest);
  unlink((path + ".blob").c_str());
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrCat("cannot remove ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BlobStore::Upload>> BlobStore::BeginUpload(
    const trainer::v1::BlobHeader& header, int64_t max_bytes, const std::string& owner) {
  RETURN_IF_ERROR(ValidateBlobDigest("header.digest", header.digest()));
  if (header.kind() != "model" && header.kind() != "data" && header.kind() != "weights" &&
      header.kind() != "source") {
    return absl::InvalidArgumentError(absl::StrCat("header.kind: '", header.kind().substr(0, 40),
                                                   "'; allowed: model, data, weights, source"));
  }
  if (header.name().size() > kMaxNameLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("header.name: at most ", kMaxNameLength, " characters"));
  }
  if (header.size_bytes() < 0) {
    return absl::InvalidArgumentError("header.size_bytes: must be 0 or more");
  }
  if (header.size_bytes() > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("upload of ", header.size_bytes(), " bytes exceeds this daemon's limit of ",
                     max_bytes, " bytes (traind --max-upload-bytes)"));
  }
  std::string temp = dir_ + "/incoming/upload-XXXXXX";
  const int fd = mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) {
    // No path: the caller may be remote, and the state directory is not theirs to know.
    return absl::InternalError(
        absl::StrCat("cannot create the upload's temporary file: ", std::strerror(errno)));
  }
  return std::unique_ptr<Upload>(new Upload(this, header, owner, temp, fd));
}

BlobStore::Upload::Upload(const BlobStore* store, trainer::v1::BlobHeader header, std::string owner,
                          std::string temp_path, int fd)
    : store_(store),
      header_(std::move(header)),
      owner_(std::move(owner)),
      temp_path_(std::move(temp_path)),
      fd_(fd) {}

BlobStore::Upload::~Upload() {
  if (fd_ >= 0) close(fd_);
  if (!committed_) unlink(temp_path_.c_str());
}

absl::Status BlobStore::Upload::Append(absl::string_view bytes) {
  if (received_ + static_cast<int64_t>(bytes.size()) > header_.size_bytes()) {
    return absl::OutOfRangeError(absl::StrCat("upload: more than the ", header_.size_bytes(),
                                              " bytes the header announced"));
  }
  hash_.Update(bytes);
  while (!bytes.empty()) {
    const ssize_t n = Files().Write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOSPC) return absl::ResourceExhaustedError("upload: disk full on the daemon");
      return absl::InternalError(absl::StrCat("upload: write failed: ", std::strerror(errno)));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
    received_ += n;
  }
  return absl::OkStatus();
}

absl::Status BlobStore::Upload::Verify() {
  if (received_ != header_.size_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload: ended after ", received_, " of ", header_.size_bytes(), " bytes"));
  }
  const std::string actual = absl::StrCat("sha256:", hash_.HexDigest());
  if (actual != header_.digest()) {
    return absl::InvalidArgumentError(absl::StrCat("upload: the content's digest is ", actual,
                                                   ", not ", header_.digest(), " as announced"));
  }
  if (Files().Fsync(fd_) != 0) {
    return absl::InternalError(absl::StrCat("upload: fsync failed: ", std::strerror(errno)));
  }
  close(fd_);
  fd_ = -1;
  verified_ = true;
  return absl::OkStatus();
}

absl::StatusOr<trainer::v1::Blob> BlobStore::Upload::Commit(const std::string& description) {
  if (!verified_) return absl::FailedPreconditionError("upload: not verified");
  const std::string path = store_->PathOf(header_.digest());
  trainer::v1::Blob blob;
  blob.set_digest(header_.digest());
  blob.set_size_bytes(header_.size_bytes());
  blob.set_kind(header_.kind());
  blob.set_name(header_.name());
  blob.set_description(description);
  blob.set_owner(owner_);
  blob.add_owners(owner_);
  // One description writer at a time, so two owners uploading the same content both stay in it.
  absl::MutexLock lock(&store_->describe_mu_);
  bool owned_before = false;
  if (absl::StatusOr<trainer::v1::Blob> stored = store_->Get(header_.digest()); stored.ok()) {
    owned_before = IsBlobOwner(*stored, owner_);
    blob.set_owner(stored->owner().empty() ? owner_ : stored->owner());
    blob.clear_owners();
    *blob.mutable_owners() = stored->owners();
    if (!IsBlobOwner(blob, owner_)) blob.add_owners(owner_);
  }
  // The description first: content without one is still usable, a description without content
  // is never looked at.
  RETURN_IF_ERROR(store_->WriteDescription(blob));
  chmod(temp_path_.c_str(), 0400);
  const absl::Status moved =
      CommitDurably(temp_path_, path, IfPresent::kReplace, "the content of " + blob.digest());
  if (!moved.ok()) return absl::InternalError(absl::StrCat("upload: ", moved.message()));
  committed_ = true;
  if (!owned_before) store_->bytes_by_owner_[owner_] += blob.size_bytes();
  return blob;
}

}  // namespace traind
