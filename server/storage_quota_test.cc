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

trainer::v1::JobEvent Running() {
  trainer::v1::JobEvent event;
  event.mutable_state_change()->set_state(trainer::v1::Job::RUNNING);
  return event;
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
  ASSERT_TRUE((*store)->AppendEvent(created->id(), Running()).ok());  // it writes its folder
  mkdir(jobs_dir.c_str(), 0700);
  mkdir(absl::StrCat(jobs_dir, "/", created->id()).c_str(), 0700);
  std::ofstream(absl::StrCat(jobs_dir, "/", created->id(), "/final.pt")) << std::string(200, 'w');

  const StorageUse alice = MeasureStorage(**store, **blobs, jobs_dir, "alice");
  EXPECT_EQ(alice.uploads, 300);
  EXPECT_EQ(alice.job_files, 200);
  const int64_t events = alice.events;  // its QUEUED and RUNNING events
  EXPECT_GT(events, 0);
  EXPECT_EQ(MeasureStorage(**store, **blobs, jobs_dir, "bob").total(), 500);

  // The quota is QuotaLedger's: what MeasureStorage finds plus what is in flight.
  QuotaLedger ledger({/*max_storage_bytes=*/1000, /*max_uploads=*/0});
  const auto measure = [&] { return MeasureStorage(**store, **blobs, jobs_dir, "alice"); };
  auto in_flight = ledger.Open("alice", /*limited=*/true);
  ASSERT_TRUE(in_flight.ok());
  EXPECT_TRUE((*in_flight)->ReserveBytes(500 - events, measure).ok()) << "up to the quota";
  auto next = ledger.Open("alice", /*limited=*/true);
  ASSERT_TRUE(next.ok());
  const absl::Status over = (*next)->ReserveBytes(1, measure);
  EXPECT_TRUE(absl::IsResourceExhausted(over));
  EXPECT_EQ(over.message(),
            absl::StrCat("storage quota: 'alice' holds ", 500 + events,
                         " bytes (uploads 300, job files 200, job events ", events, ") and has ",
                         500 - events,
                         " more in flight in 1 upload besides this one; 1 more would exceed the "
                         "1000 bytes of traind --max-storage-per-token; wait for those uploads to "
                         "end, or trainctl delete finished jobs to free space"));
}

// Space nobody counted: a program's stored log lines count against its owner like its files, and
// an ended job's folder is walked once, then read from the store (a quota check or a listing
// costs no walk of 10,000 jobs' folders). A blob released by its owner leaves its count.
TEST(StorageQuotaTest, EventsCountAndAnEndedJobsFilesAreMeasuredOnce) {
  TempDirForTests temp;
  auto store = Store::Open(temp.path() + "/traind.db");
  auto blobs = BlobStore::Open(temp.path() + "/blobs");
  ASSERT_TRUE(store.ok() && blobs.ok());
  const std::string jobs_dir = temp.path() + "/jobs";
  trainer::v1::Job job;
  job.set_owner("alice");
  auto created = (*store)->CreateJob(job);
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE((*store)->AppendEvent(created->id(), Running()).ok());
  const int64_t before = MeasureStorage(**store, **blobs, jobs_dir, "alice").events;
  trainer::v1::JobEvent line;
  line.mutable_log()->set_text(std::string(16384, 'x'));
  ASSERT_TRUE((*store)->AppendEvent(created->id(), line).ok());
  EXPECT_GE(MeasureStorage(**store, **blobs, jobs_dir, "alice").events, before + 16384);

  mkdir(jobs_dir.c_str(), 0700);
  const std::string dir = absl::StrCat(jobs_dir, "/", created->id());
  mkdir(dir.c_str(), 0700);
  std::ofstream(dir + "/final.pt") << std::string(200, 'w');
  trainer::v1::JobEvent ended;
  ended.mutable_state_change()->set_state(trainer::v1::Job::SUCCEEDED);
  ASSERT_TRUE((*store)->AppendEvent(created->id(), ended).ok());
  EXPECT_EQ(MeasureStorage(**store, **blobs, jobs_dir, "alice").job_files, 200);
  std::ofstream(dir + "/late.txt") << std::string(50, 'l');  // not walked again
  EXPECT_EQ(MeasureStorage(**store, **blobs, jobs_dir, "alice").job_files, 200);
  trainer::v1::Job* listed = &*created;
  FillDiskBytes(**store, jobs_dir, {listed});
  EXPECT_GE(created->disk_bytes(), 200 + 16384);
  EXPECT_LT(created->disk_bytes(), 200 + 16384 + 1024);  // the late file is not in it

  Upload(**blobs, std::string(300, 'a'), "alice");
  Upload(**blobs, std::string(300, 'a'), "bob");  // the same content, two owners
  EXPECT_EQ((*blobs)->BytesOwnedBy("alice"), 300);
  Sha256 hash;
  hash.Update(std::string(300, 'a'));
  ASSERT_TRUE((*blobs)->Release(absl::StrCat("sha256:", hash.HexDigest()), "alice").ok());
  EXPECT_EQ((*blobs)->BytesOwnedBy("alice"), 0);
  EXPECT_EQ((*blobs)->BytesOwnedBy("bob"), 300);
  // Read again from the descriptions by a new BlobStore (a restart): the same.
  auto reopened = BlobStore::Open(temp.path() + "/blobs");
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->BytesOwnedBy("bob"), 300);
  EXPECT_EQ((*reopened)->BytesOwnedBy("alice"), 0);
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
