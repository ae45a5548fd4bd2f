#include "server/storage_quota.h"

#include <sys/stat.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

// Stores `content` as a blob uploaded by `owner`.
void Upload(BlobStore& blobs, const std::string& content, const std::string& owner) {
  Sha256 hash;
  hash.Update(content);
  trainer::v1::BlobHeader header;
  header.set_digest(absl::StrCat("sha256:", hash.HexDigest()));
  header.set_size_bytes(static_cast<int64_t>(content.size()));
  header.set_kind("data");
  auto upload = blobs.BeginUpload(header, 1 << 20, owner);
  ASSERT_TRUE(upload.ok());
  ASSERT_TRUE((*upload)->Append(content).ok());
  ASSERT_TRUE((*upload)->Verify().ok());
  ASSERT_TRUE((*upload)->Commit("").ok());
}

TEST(StorageQuotaTest, CountsAnOwnersUploadsAndJobFilesAndNamesTheNumbers) {
  TempDirForTests temp;
  auto store = Store::Open(temp.path() + "/traind.db");
  auto blobs = BlobStore::Open(temp.path() + "/blobs");
  ASSERT_TRUE(store.ok() && blobs.ok());
  const std::string jobs_dir = temp.path() + "/jobs";
  Upload(**blobs, std::string(300, 'a'), "alice");
  Upload(**blobs, std::string(500, 'b'), "bob");
  trainer::v1::Job job;
  job.set_owner("alice");
  job.mutable_spec()->set_model("mlp");
  auto created = (*store)->CreateJob(job);
  ASSERT_TRUE(created.ok());
  mkdir(jobs_dir.c_str(), 0700);
  mkdir(absl::StrCat(jobs_dir, "/", created->id()).c_str(), 0700);
  std::ofstream(absl::StrCat(jobs_dir, "/", created->id(), "/final.pt")) << std::string(200, 'w');

  const StorageUse alice = MeasureStorage(**store, **blobs, jobs_dir, "alice");
  EXPECT_EQ(alice.uploads, 300);
  EXPECT_EQ(alice.job_files, 200);
  EXPECT_EQ(MeasureStorage(**store, **blobs, jobs_dir, "bob").total(), 500);

  EXPECT_TRUE(CheckStorageQuota(**store, **blobs, jobs_dir, "alice", 500, 1000).ok());
  EXPECT_TRUE(CheckStorageQuota(**store, **blobs, jobs_dir, "alice", 5000, 0).ok()) << "0: none";
  const absl::Status over = CheckStorageQuota(**store, **blobs, jobs_dir, "alice", 501, 1000);
  EXPECT_TRUE(absl::IsResourceExhausted(over));
  EXPECT_EQ(over.message(),
            "storage quota: alice holds 500 bytes (uploads 300, job files 200); 501 more would "
            "exceed the 1000 bytes of traind --max-storage-per-token; trainctl delete finished "
            "jobs to free space");
}

}  // namespace
}  // namespace traind
