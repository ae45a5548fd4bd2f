// BlobStore: files people upload (TorchScript models, datasets), content-addressed by SHA-256 under
// <state-dir>/blobs/:
//   sha256/HEX        the content, read-only once there; jobs name it "sha256:HEX"
//   sha256/HEX.blob   its description (a serialized trainer.v1.Blob)
//   incoming/         uploads in progress, private temporary files
// Content appears under sha256/ only by rename, after every byte arrived, the size and digest
// matched and the file was fsynced: an interrupted or forged upload leaves nothing a job can use
// (and Open removes what a crash left in incoming/). The same content uploaded twice is stored
// once. Thread-safe: uploads are independent files; the rename is atomic.
#ifndef TRAIND_SERVER_BLOB_STORE_H_
#define TRAIND_SERVER_BLOB_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/sha256.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class BlobStore {
 public:
  // Creates `dir` (0700) and its folders if missing; empties incoming/.
  static absl::StatusOr<std::unique_ptr<BlobStore>> Open(const std::string& dir);

  // Where the content of "sha256:HEX" lives (whether or not it exists). `digest` must be valid.
  std::string PathOf(const std::string& digest) const;
  // NOT_FOUND when the content is not stored.
  absl::StatusOr<trainer::v1::Blob> Get(const std::string& digest) const;
  // Removes the content and its description (a job deleted was its last user).
  absl::Status Remove(const std::string& digest);
  // What deleting `owner`'s last job that used the blob does: removes it if nobody else uploaded
  // it (true), else only takes `owner` off its owners (false): another token's upload stays.
  absl::StatusOr<bool> Release(const std::string& digest, const std::string& owner);

  // One upload in progress. Not thread-safe; one caller at a time.
  class Upload {
   public:
    ~Upload();  // removes the temporary file unless committed
    // OUT_OF_RANGE once more bytes arrive than the header announced.
    absl::Status Append(absl::string_view bytes);
    // All bytes there and the digest right (INVALID_ARGUMENT with both digests otherwise); the
    // file is fsynced. Then `temp_path()` may be inspected before Commit.
    absl::Status Verify();
    const std::string& temp_path() const { return temp_path_; }
    const trainer::v1::BlobHeader& header() const { return header_; }
    // Moves the content into place and writes its description. The Blob as stored.
    absl::StatusOr<trainer::v1::Blob> Commit(const std::string& description);

   private:
    friend class BlobStore;
    Upload(const BlobStore* store, trainer::v1::BlobHeader header, std::string owner,
           std::string temp_path, int fd);
    const BlobStore* store_;
    const trainer::v1::BlobHeader header_;
    const std::string owner_;
    const std::string temp_path_;
    int fd_;
    int64_t received_ = 0;
    Sha256 hash_;
    bool verified_ = false;
    bool committed_ = false;
  };
  // INVALID_ARGUMENT for a malformed header (digest, kind, name); RESOURCE_EXHAUSTED when
  // size_bytes exceeds `max_bytes`, with both numbers.
  // `owner`: who uploads (the daemon's word, not the client's), kept in the description.
  absl::StatusOr<std::unique_ptr<Upload>> BeginUpload(const trainer::v1::BlobHeader& header,
                                                      int64_t max_bytes,
                                                      const std::string& owner = "");
  // Bytes of the blobs `owner` uploaded: from an index kept as uploads commit and owners release
  // them (read from the descriptions once, at Open), so an upload's quota check costs the same
  // with 100,000 blobs stored as with none.
  int64_t BytesOwnedBy(const std::string& owner) const;

 private:
  explicit BlobStore(std::string dir) : dir_(std::move(dir)) {}
  // Every description's owners and size, into bytes_by_owner_ (Open).
  void IndexOwners();
  const std::string dir_;
  // Writes `blob` durably as the content's description (HEX.blob).
  absl::Status WriteDescription(const trainer::v1::Blob& blob) const;
  // Serializes read-merge-write of descriptions (their owners): Upload::Commit, Release.
  mutable absl::Mutex describe_mu_;
  mutable absl::flat_hash_map<std::string, int64_t> bytes_by_owner_ ABSL_GUARDED_BY(describe_mu_);
};

// Whether `owner` uploaded `blob` (is one of its owners).
bool IsBlobOwner(const trainer::v1::Blob& blob, const std::string& owner);

}  // namespace traind

#endif  // TRAIND_SERVER_BLOB_STORE_H_
