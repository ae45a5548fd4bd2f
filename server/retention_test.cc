#include "server/retention.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

using trainer::v1::Job;
using trainer::v1::JobEvent;

class RetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::Open(dir_ / "traind.db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    auto blobs = BlobStore::Open(dir_ / "blobs");
    ASSERT_TRUE(blobs.ok()) << blobs.status();
    blobs_ = std::move(*blobs);
    jobs_dir_ = dir_ / "jobs";
  }

  static Job Spec() {
    Job job;
    job.mutable_spec()->set_model("lenet5");
    job.mutable_spec()->set_device("cpu");
    return job;
  }
  // Ends job `id` in `state` at `when`, with a file in its directory.
  void End(int64_t id, Job::State state, absl::Time when) {
    JobEvent event;
    event.mutable_state_change()->set_state(state);
    const int64_t seconds = absl::ToUnixSeconds(when);
    event.mutable_time()->set_seconds(seconds);
    ASSERT_TRUE(store_->AppendEvent(id, event).ok());
    std::filesystem::create_directories(jobs_dir_ + "/" + std::to_string(id));
    std::ofstream(jobs_dir_ + "/" + std::to_string(id) + "/best.pt") << "weights";
  }
  bool Exists(int64_t id) { return store_->GetJob(id).ok(); }
  bool HasFiles(int64_t id) {
    return std::filesystem::exists(jobs_dir_ + "/" + std::to_string(id));
  }

  TempDirForTests dir_;
  std::string jobs_dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<BlobStore> blobs_;
};

TEST_F(RetentionTest, DeletesWhatEndedBeforeTheCutoffAndKeepsTheRest) {
  const absl::Time now = absl::Now();
  const int64_t old_job = store_->CreateJob(Spec())->id();
  const int64_t recent_job = store_->CreateJob(Spec())->id();
  const int64_t queued_job = store_->CreateJob(Spec())->id();
  End(old_job, Job::SUCCEEDED, now - absl::Hours(24 * 10));
  End(recent_job, Job::FAILED, now - absl::Hours(24));
  // A sweep that ended long ago goes whole; one with a member still queued stays whole.
  auto old_sweep = store_->CreateSweep(trainer::v1::SweepSpec(), {Spec(), Spec()});
  ASSERT_TRUE(old_sweep.ok());
  for (int64_t id : old_sweep->job_ids()) End(id, Job::SUCCEEDED, now - absl::Hours(24 * 9));
  auto open_sweep = store_->CreateSweep(trainer::v1::SweepSpec(), {Spec(), Spec()});
  ASSERT_TRUE(open_sweep.ok());
  End(open_sweep->job_ids(0), Job::CANCELLED, now - absl::Hours(24 * 9));

  Retention retention(store_.get(), blobs_.get(), {absl::Hours(24 * 7), absl::Hours(1), jobs_dir_});
  absl::StatusOr<Retention::Pruned> pruned = retention.PruneOnce(now);
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  EXPECT_EQ(pruned->jobs, 3);
  EXPECT_EQ(pruned->sweeps, 1);
  EXPECT_FALSE(Exists(old_job));
  EXPECT_FALSE(HasFiles(old_job));
  EXPECT_TRUE(store_->ReadEvents(old_job, 1, 10)->empty());
  for (int64_t id : old_sweep->job_ids()) EXPECT_FALSE(Exists(id));
  EXPECT_FALSE(store_->GetSweep(old_sweep->id()).ok());

  EXPECT_TRUE(Exists(recent_job));
  EXPECT_TRUE(HasFiles(recent_job));
  EXPECT_TRUE(Exists(queued_job));
  for (int64_t id : open_sweep->job_ids()) EXPECT_TRUE(Exists(id));
  EXPECT_TRUE(store_->GetSweep(open_sweep->id()).ok());

  // Nothing more to do the second time.
  EXPECT_EQ(retention.PruneOnce(now)->jobs, 0);
}

TEST_F(RetentionTest, WhatAnUnfinishedJobNeedsIsKept) {
  const absl::Time now = absl::Now();
  const int64_t dependency = store_->CreateJob(Spec())->id();
  const int64_t weights = store_->CreateJob(Spec())->id();
  const int64_t unneeded = store_->CreateJob(Spec())->id();
  for (int64_t id : {dependency, weights, unneeded})
    End(id, Job::SUCCEEDED, now - absl::Hours(24 * 30));
  Job waiting = Spec();
  waiting.add_after(dependency);
  waiting.mutable_spec()->set_init_from(std::to_string(weights) + ":best");
  const int64_t queued = store_->CreateJob(waiting)->id();

  Retention retention(store_.get(), blobs_.get(), {absl::Hours(24), absl::Hours(1), jobs_dir_});
  EXPECT_EQ(retention.PruneOnce(now)->jobs, 1);
  EXPECT_FALSE(Exists(unneeded));
  EXPECT_TRUE(Exists(dependency));
  EXPECT_TRUE(HasFiles(weights));  // its best.pt is what the queued job starts from
  // Once the queued job has ended, they go too.
  End(queued, Job::CANCELLED, now - absl::Hours(24 * 2));
  EXPECT_EQ(retention.PruneOnce(now)->jobs, 3);
}

TEST_F(RetentionTest, ASweepStaysWholeWhileAnUnfinishedJobNeedsOneOfItsMembers) {
  const absl::Time now = absl::Now();
  auto sweep = store_->CreateSweep(trainer::v1::SweepSpec(), {Spec(), Spec()});
  ASSERT_TRUE(sweep.ok()) << sweep.status();
  for (int64_t id : sweep->job_ids()) End(id, Job::SUCCEEDED, now - absl::Hours(24 * 30));
  auto other = store_->CreateSweep(trainer::v1::SweepSpec(), {Spec()});
  ASSERT_TRUE(other.ok());
  End(other->job_ids(0), Job::SUCCEEDED, now - absl::Hours(24 * 30));
  Job fine_tune = Spec();  // starts from the second member's weights
  fine_tune.mutable_spec()->set_init_from(std::to_string(sweep->job_ids(1)) + ":best");
  const int64_t queued = store_->CreateJob(fine_tune)->id();

  Retention retention(store_.get(), blobs_.get(), {absl::Hours(24), absl::Hours(1), jobs_dir_});
  absl::StatusOr<Retention::Pruned> pruned = retention.PruneOnce(now);
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  EXPECT_EQ(pruned->sweeps, 1);  // the other sweep only
  EXPECT_FALSE(store_->GetSweep(other->id()).ok());
  EXPECT_TRUE(store_->GetSweep(sweep->id()).ok());
  for (int64_t id : sweep->job_ids()) {
    EXPECT_TRUE(Exists(id));
    EXPECT_TRUE(HasFiles(id));
  }
  // Once the fine-tuning job has ended, the sweep goes whole.
  End(queued, Job::SUCCEEDED, now - absl::Hours(24 * 2));
  pruned = retention.PruneOnce(now);
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(pruned->sweeps, 1);
  EXPECT_FALSE(store_->GetSweep(sweep->id()).ok());
}

TEST_F(RetentionTest, ManyJobsAreDeletedInBatchesAndTheFileShrinks) {
  const absl::Time long_ago = absl::Now() - absl::Hours(24 * 30);
  trainer::v1::JobEvent log;
  log.mutable_log()->set_text(std::string(2000, 'x'));
  for (int i = 0; i < 300; ++i) {
    const int64_t id = store_->CreateJob(Spec())->id();
    for (int e = 0; e < 20; ++e) ASSERT_TRUE(store_->AppendEvent(id, log).ok());
    End(id, Job::SUCCEEDED, long_ago);
  }
  ASSERT_TRUE(store_->Compact(1 << 20).ok());
  const auto before = std::filesystem::file_size(dir_ / "traind.db");
  Retention retention(store_.get(), blobs_.get(), {absl::Hours(24), absl::Hours(1), jobs_dir_});
  EXPECT_EQ(retention.PruneOnce(absl::Now())->jobs, 300);
  const auto after = std::filesystem::file_size(dir_ / "traind.db");
  EXPECT_LT(after, before / 4) << before << " -> " << after;
}

}  // namespace
}  // namespace traind
