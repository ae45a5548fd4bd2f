#include "server/storage_quota.h"

#include <sys/stat.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"
#include "server/quota_ledger.h"

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

  // The quota is QuotaLedger's: what MeasureStorage finds plus what is in flight.
  QuotaLedger ledger({/*max_storage_bytes=*/1000, /*max_uploads=*/0});
  const auto measure = [&] { return MeasureStorage(**store, **blobs, jobs_dir, "alice"); };
  auto in_flight = ledger.Open("alice", /*limited=*/true);
  ASSERT_TRUE(in_flight.ok());
  EXPECT_TRUE((*in_flight)->ReserveBytes(500, measure).ok()) << "500 stored + 500: the quota";
  auto next = ledger.Open("alice", /*limited=*/true);
  ASSERT_TRUE(next.ok());
  const absl::Status over = (*next)->ReserveBytes(1, measure);
  EXPECT_TRUE(absl::IsResourceExhausted(over));
  EXPECT_EQ(over.message(),
            "storage quota: 'alice' holds 500 bytes (uploads 300, job files 200) and has 500 more "
            "in flight in 1 upload besides this one; 1 more would exceed the 1000 bytes of traind "
            "--max-storage-per-token; wait for those uploads to end, or trainctl delete finished "
            "jobs to free space");
}

// An upload's reservation becomes stored bytes: counted once, by the measurement, after it settles.
TEST(StorageQuotaTest, ACommittedUploadIsCountedOnceAfterItSettles) {
  TempDirForTests temp;
  auto store = Store::Open(temp.path() + "/traind.db");
  auto blobs = BlobStore::Open(temp.path() + "/blobs");
  ASSERT_TRUE(store.ok() && blobs.ok());
  const std::string jobs_dir = temp.path() + "/jobs";
  QuotaLedger ledger({/*max_storage_bytes=*/1000, /*max_uploads=*/0});
  const auto measure = [&] { return MeasureStorage(**store, **blobs, jobs_dir, "alice"); };
  {
    auto upload = ledger.Open("alice", /*limited=*/true);
    ASSERT_TRUE(upload.ok());
    ASSERT_TRUE((*upload)->ReserveBytes(400, measure).ok());
    Upload(**blobs, std::string(400, 'a'), "alice");
    (*upload)->Settle();
    EXPECT_EQ((*upload)->bytes(), 0);
  }
  EXPECT_EQ(ledger.InFlightFor("alice").uploads, 0);
  auto fits = ledger.Open("alice", /*limited=*/true);
  ASSERT_TRUE(fits.ok());
  EXPECT_TRUE((*fits)->ReserveBytes(600, measure).ok()) << "400 stored + 600";
  auto over = ledger.Open("alice", /*limited=*/true);
  ASSERT_TRUE(over.ok());
  EXPECT_TRUE(absl::IsResourceExhausted((*over)->ReserveBytes(1, measure)));
}

}  // namespace
}  // namespace traind
