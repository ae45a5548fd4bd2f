#include "server/blob_store.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/faulty_file_ops.h"
#include "common/sha256.h"
#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

std::string DigestOf(const std::string& content) {
  Sha256 hash;
  hash.Update(content);
  return absl::StrCat("sha256:", hash.HexDigest());
}

trainer::v1::BlobHeader Header(const std::string& content, const std::string& kind = "data") {
  trainer::v1::BlobHeader header;
  header.set_digest(DigestOf(content));
  header.set_size_bytes(static_cast<int64_t>(content.size()));
  header.set_kind(kind);
  header.set_name("data.pt");
  return header;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

int FilesIn(const std::string& dir) {
  int n = 0;
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  while (const dirent* e = readdir(d.get())) n += e->d_name[0] != '.';
  return n;
}

TEST(BlobStoreTest, CommittedContentIsFoundByItsDigest) {
  TempDirForTests temp;
  auto store = BlobStore::Open(temp.path() + "/blobs");
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string content = "some bytes of a dataset";
  auto upload = (*store)->BeginUpload(Header(content), 1 << 20);
  ASSERT_TRUE(upload.ok()) << upload.status();
  ASSERT_TRUE((*upload)->Append(content.substr(0, 5)).ok());
  ASSERT_TRUE((*upload)->Append(content.substr(5)).ok());
  ASSERT_TRUE((*upload)->Verify().ok());
  ASSERT_TRUE((*upload)->Commit("a description").ok());
  auto blob = (*store)->Get(DigestOf(content));
  ASSERT_TRUE(blob.ok()) << blob.status();
  EXPECT_EQ(blob->size_bytes(), static_cast<int64_t>(content.size()));
  EXPECT_EQ(blob->kind(), "data");
  EXPECT_EQ(blob->description(), "a description");
  std::ifstream in((*store)->PathOf(DigestOf(content)));
  std::string stored((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(stored, content);
  EXPECT_EQ(FilesIn(temp.path() + "/blobs/incoming"), 0);
}

// Every write, fsync and rename of an upload failing in turn: the failing step says what failed
// and why, nothing is stored under the digest, nothing is left in incoming/, and the same upload
// then succeeds.
TEST(BlobStoreTest, AFailedWriteFsyncOrRenameStoresNothingAndSaysWhy) {
  using Call = FaultyFileOps::Call;
  struct Fault {
    Call call;
    int error;
    int skip;  // calls of that kind that go through first
    absl::StatusCode code;
    const char* says;
  };
  const absl::StatusCode kInternal = absl::StatusCode::kInternal;
  const Fault faults[] = {
      {Call::kWrite, ENOSPC, 0, absl::StatusCode::kResourceExhausted,
       "upload: disk full on the daemon"},
      {Call::kWrite, EIO, 0, kInternal, "upload: write failed: Input/output error"},
      {Call::kFsync, EIO, 0, kInternal, "upload: fsync failed: Input/output error"},
      {Call::kFsync, EIO, 1, kInternal,  // the description's
       "cannot write the description of sha256:"},
      {Call::kRename, EIO, 0, kInternal, "cannot write the description of sha256:"},
      {Call::kRename, EROFS, 1, kInternal, "upload: cannot write the content of sha256:"},
  };
  TempDirForTests temp;
  auto store = BlobStore::Open(temp.path() + "/blobs");
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string content = "bytes that must arrive whole or not at all";
  for (const Fault& fault : faults) {
    SCOPED_TRACE(fault.says);
    FaultyFileOps faulty;
    absl::Status status;
    {
      ScopedFileOps installed(&faulty);
      faulty.FailOnce(fault.call, fault.error, fault.skip);
      auto upload = (*store)->BeginUpload(Header(content), 1 << 20);
      ASSERT_TRUE(upload.ok()) << upload.status();
      status = (*upload)->Append(content);
      if (status.ok()) status = (*upload)->Verify();
      if (status.ok()) status = (*upload)->Commit("a description").status();
    }
    EXPECT_TRUE(faulty.failed());
    EXPECT_EQ(status.code(), fault.code) << status;
    EXPECT_NE(status.message().find(fault.says), std::string::npos) << status;
    EXPECT_FALSE(Exists((*store)->PathOf(DigestOf(content))));
    EXPECT_EQ(FilesIn(temp.path() + "/blobs/incoming"), 0);
  }
  auto upload = (*store)->BeginUpload(Header(content), 1 << 20);
  ASSERT_TRUE(upload.ok()) << upload.status();
  ASSERT_TRUE((*upload)->Append(content).ok());
  ASSERT_TRUE((*upload)->Verify().ok());
  ASSERT_TRUE((*upload)->Commit("a description").ok());
  auto blob = (*store)->Get(DigestOf(content));
  ASSERT_TRUE(blob.ok()) << blob.status();
  EXPECT_EQ(blob->description(), "a description");
}

// The same content from two tokens: both own it; deleting one's last job leaves the other's.
TEST(BlobStoreTest, SharedContentIsReleasedOwnerByOwner) {
  TempDirForTests temp;
  auto store = BlobStore::Open(temp.path() + "/blobs");
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string content = "weights both have";
  for (const std::string owner : {"alice", "bob"}) {
    auto upload = (*store)->BeginUpload(Header(content), 1 << 20, owner);
    ASSERT_TRUE(upload.ok()) << upload.status();
    ASSERT_TRUE((*upload)->Append(content).ok());
    ASSERT_TRUE((*upload)->Verify().ok());
    ASSERT_TRUE((*upload)->Commit("").ok());
  }
  const std::string digest = DigestOf(content);
  auto blob = (*store)->Get(digest);
  ASSERT_TRUE(blob.ok());
  EXPECT_TRUE(IsBlobOwner(*blob, "alice"));
  EXPECT_TRUE(IsBlobOwner(*blob, "bob"));
  EXPECT_EQ((*store)->BytesOwnedBy("bob"), static_cast<int64_t>(content.size()));

  absl::StatusOr<bool> removed = (*store)->Release(digest, "bob");
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_FALSE(*removed);  // alice's upload stays
  blob = (*store)->Get(digest);
  ASSERT_TRUE(blob.ok());
  EXPECT_FALSE(IsBlobOwner(*blob, "bob"));
  EXPECT_EQ((*store)->BytesOwnedBy("bob"), 0);
  removed = (*store)->Release(digest, "alice");
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(*removed);
  EXPECT_FALSE((*store)->Get(digest).ok());
}

TEST(BlobStoreTest, AnAbandonedUploadLeavesNothing) {
  TempDirForTests temp;
  auto store = BlobStore::Open(temp.path() + "/blobs");
  ASSERT_TRUE(store.ok());
  const std::string content(100000, 'x');
  {
    auto upload = (*store)->BeginUpload(Header(content), 1 << 20);
    ASSERT_TRUE(upload.ok());
    ASSERT_TRUE((*upload)->Append(content.substr(0, 50000)).ok());
    EXPECT_EQ(FilesIn(temp.path() + "/blobs/incoming"), 1);
    // The call ends here (client gone): the upload is dropped unverified.
  }
  EXPECT_EQ(FilesIn(temp.path() + "/blobs/incoming"), 0);
  EXPECT_TRUE(absl::IsNotFound((*store)->Get(DigestOf(content)).status()));
  EXPECT_FALSE(Exists((*store)->PathOf(DigestOf(content))));
}

TEST(BlobStoreTest, ShortOrForgedContentIsRefusedAndNotStored) {
  TempDirForTests temp;
  auto store = BlobStore::Open(temp.path() + "/blobs");
  ASSERT_TRUE(store.ok());
  const std::string content = "the real content";
  auto short_upload = (*store)->BeginUpload(Header(content), 1 << 20);
  ASSERT_TRUE((*short_upload)->Append("the real").ok());
  EXPECT_EQ((*short_upload)->Verify().message(), "upload: ended after 8 of 16 bytes");

  trainer::v1::BlobHeader forged = Header(content);
  auto upload = (*store)->BeginUpload(forged, 1 << 20);
  ASSERT_TRUE((*upload)->Append("the fake content").ok());
  const absl::Status verify = (*upload)->Verify();
  EXPECT_TRUE(absl::IsInvalidArgument(verify));
  EXPECT_EQ(verify.message(),
            absl::StrCat("upload: the content's digest is ", DigestOf("the fake content"), ", not ",
                         DigestOf(content), " as announced"));
  EXPECT_FALSE((*upload)->Commit("").ok());
  EXPECT_TRUE(absl::IsNotFound((*store)->Get(DigestOf(content)).status()));

  auto more = (*store)->BeginUpload(Header("abc"), 1 << 20);
  EXPECT_TRUE(absl::IsOutOfRange((*more)->Append("abcd")));
}

TEST(BlobStoreTest, HeadersAreCheckedBeforeAnyByteIsStored) {
  TempDirForTests temp;
  auto store = BlobStore::Open(temp.path() + "/blobs");
  ASSERT_TRUE(store.ok());
  trainer::v1::BlobHeader big = Header("x");
  big.set_size_bytes(2000);
  EXPECT_EQ((*store)->BeginUpload(big, 1000).status().message(),
            "upload of 2000 bytes exceeds this daemon's limit of 1000 bytes (traind "
            "--max-upload-bytes)");
  trainer::v1::BlobHeader bad_digest = Header("x");
  bad_digest.set_digest("sha256:../../etc/passwd");
  EXPECT_EQ((*store)->BeginUpload(bad_digest, 1000).status().message(),
            "header.digest: 'sha256:../../etc/passwd' is not a digest; expected sha256: and 64 "
            "lowercase hex digits");
  trainer::v1::BlobHeader bad_kind = Header("x", "checkpoint");
  EXPECT_EQ((*store)->BeginUpload(bad_kind, 1000).status().message(),
            "header.kind: 'checkpoint'; allowed: model, data, weights, source");
  EXPECT_TRUE(absl::IsInvalidArgument((*store)->Get("sha256:zz").status()));
  EXPECT_EQ(FilesIn(temp.path() + "/blobs/incoming"), 0);
}

TEST(BlobStoreTest, OpenRemovesWhatACrashLeftInIncoming) {
  TempDirForTests temp;
  ASSERT_TRUE(BlobStore::Open(temp.path() + "/blobs").ok());
  std::ofstream(temp.path() + "/blobs/incoming/upload-abc123") << "half a file";
  ASSERT_TRUE(BlobStore::Open(temp.path() + "/blobs").ok());
  EXPECT_EQ(FilesIn(temp.path() + "/blobs/incoming"), 0);
}

}  // namespace
}  // namespace traind
