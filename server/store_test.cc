#include "server/store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/faulty_sqlite_vfs.h"

namespace traind {
namespace {

using trainer::v1::Job;
using trainer::v1::JobEvent;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("store_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "traind.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<Store> Open() {
    auto store = Store::Open(path_);
    EXPECT_TRUE(store.ok()) << store.status();
    return std::move(*store);
  }
  Job Spec(int priority = 0, const std::string& key = "") {
    Job job;
    job.mutable_spec()->set_model("lenet5");
    job.mutable_spec()->set_device("cpu");
    job.set_priority(priority);
    job.set_idempotency_key(key);
    return job;
  }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(StoreTest, CreateJobIsQueuedWithItsFirstEvent) {
  auto store = Open();
  auto job = store->CreateJob(Spec());
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->id(), 1);
  EXPECT_EQ(job->state(), Job::QUEUED);
  EXPECT_EQ(job->last_seq(), 1);
  EXPECT_TRUE(job->has_create_time());
  auto events = store->ReadEvents(job->id(), 1, 10);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].state_change().state(), Job::QUEUED);
}

TEST_F(StoreTest, SeqIsDenseAndTheRowFollowsTheEvents) {
  auto store = Open();
  const int64_t id = store->CreateJob(Spec())->id();
  JobEvent running;
  running.mutable_state_change()->set_state(Job::RUNNING);
  ASSERT_TRUE(store->AppendEvent(id, running).ok());
  for (int i = 0; i < 5; ++i) {
    JobEvent step;
    step.mutable_step()->set_batch(i);
    auto stored = store->AppendEvent(id, step);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->seq(), 3 + i);
  }
  auto events = store->ReadEvents(id, 4, 100);
  ASSERT_EQ(events->size(), 4u);
  EXPECT_EQ((*events)[0].seq(), 4);
  EXPECT_EQ(store->GetJob(id)->state(), Job::RUNNING);
  EXPECT_EQ(store->GetJob(id)->last_seq(), 7);
}

// A worker's burst: one transaction, seqs dense and in order, the row folded as event by event,
// and the listener told of each.
TEST_F(StoreTest, AppendEventsStoresABurstInOrder) {
  auto store = Open();
  const int64_t id = store->CreateJob(Spec())->id();
  std::vector<int64_t> told;
  store->SetEventListener([&](int64_t job_id, int64_t seq) {
    if (job_id == id) told.push_back(seq);
  });
  std::vector<JobEvent> burst(3);
  burst[0].mutable_state_change()->set_state(Job::RUNNING);
  burst[1].mutable_log()->set_text("Epoch: 001/010");
  burst[2].mutable_step()->set_batch(7);
  std::vector<JobEvent> stored = burst;
  ASSERT_TRUE(store->AppendEvents(id, &stored).ok());
  ASSERT_EQ(stored.size(), 3u);
  EXPECT_EQ(stored[0].seq(), 2);
  EXPECT_EQ(stored[2].seq(), 4);
  EXPECT_TRUE(stored[2].has_time());
  EXPECT_EQ(told, (std::vector<int64_t>{2, 3, 4}));
  auto events = store->ReadEvents(id, 2, 100);
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[1].log().text(), "Epoch: 001/010");
  EXPECT_EQ((*events)[2].step().batch(), 7);
  EXPECT_EQ(store->GetJob(id)->state(), Job::RUNNING);
  EXPECT_EQ(store->GetJob(id)->last_seq(), 4);

  std::vector<JobEvent> refused = burst;
  EXPECT_EQ(store->AppendEvents(id + 1, &refused).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(refused.size(), 3u);  // still there for a retry
  EXPECT_EQ(told.size(), 3u);
}

TEST_F(StoreTest, ExpectedStateIsACompareAndSet) {
  auto store = Open();
  const int64_t id = store->CreateJob(Spec())->id();
  JobEvent cancel;
  cancel.mutable_state_change()->set_state(Job::CANCELLED);
  auto wrong = store->AppendEvent(id, cancel, Job::RUNNING);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store->GetJob(id)->last_seq(), 1);  // nothing written
  EXPECT_TRUE(store->AppendEvent(id, cancel, Job::QUEUED).ok());
}

TEST_F(StoreTest, SurvivesReopen) {
  int64_t id;
  {
    auto store = Open();
    id = store->CreateJob(Spec())->id();
    ASSERT_TRUE(store->CreateJob(Spec()).ok());
  }
  auto store = Open();
  EXPECT_EQ(store->GetJob(id)->spec().model(), "lenet5");
  EXPECT_EQ(store->CreateJob(Spec())->id(), 3);
}

TEST_F(StoreTest, ListPagesNewestFirstAndFilters) {
  auto store = Open();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store->CreateJob(Spec()).ok());
  JobEvent cancel;
  cancel.mutable_state_change()->set_state(Job::CANCELLED);
  ASSERT_TRUE(store->AppendEvent(2, cancel).ok());
  auto page = store->ListJobs(Store::JobFilter{}, 0, 2);
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].id(), 5);
  auto next = store->ListJobs(Store::JobFilter{}, (*page)[1].id(), 10);
  ASSERT_EQ(next->size(), 3u);
  EXPECT_EQ((*next)[0].id(), 3);
  auto cancelled = store->ListJobs(Store::JobFilter{{Job::CANCELLED}}, 0, 10);
  ASSERT_EQ(cancelled->size(), 1u);
  EXPECT_EQ((*cancelled)[0].id(), 2);
  EXPECT_EQ((*store->OldestInState(Job::QUEUED))->id(), 1);
}

TEST_F(StoreTest, IdempotencyKeyReturnsTheFirstJob) {
  auto store = Open();
  bool existed = true;
  auto first = store->CreateJob(Spec(0, "nightly-1"), &existed);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(existed);
  auto second = store->CreateJob(Spec(5, "nightly-1"), &existed);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(existed);
  EXPECT_EQ(second->id(), first->id());
  EXPECT_EQ(store->CreateJob(Spec(0, "nightly-2"))->id(), first->id() + 1);
}

TEST_F(StoreTest, EveryCommittedEventIsToldOnceAndNothingElse) {
  auto store = Open();
  std::vector<std::pair<int64_t, int64_t>> told;
  store->SetEventListener([&](int64_t id, int64_t seq) { told.emplace_back(id, seq); });
  const int64_t id = store->CreateJob(Spec(0, "k"))->id();
  JobEvent running;
  running.mutable_state_change()->set_state(Job::RUNNING);
  ASSERT_TRUE(store->AppendEvent(id, running).ok());
  ASSERT_TRUE(store->CreateJob(Spec(0, "k")).ok());                 // the same key: nothing new
  EXPECT_FALSE(store->AppendEvent(id, running, Job::QUEUED).ok());  // refused: nothing told
  auto sweep = store->CreateSweep(trainer::v1::SweepSpec(), {Spec(), Spec()});
  ASSERT_TRUE(sweep.ok());
  EXPECT_EQ(told, (std::vector<std::pair<int64_t, int64_t>>{
                      {id, 1}, {id, 2}, {sweep->job_ids(0), 1}, {sweep->job_ids(1), 1}}));
}

TEST_F(StoreTest, IdempotencyKeysArePerOwner) {
  auto store = Open();
  Job alice = Spec(0, "nightly-1");
  alice.set_owner("alice");
  Job bob = alice;
  bob.set_owner("bob");
  bool existed = true;
  auto first = store->CreateJob(alice, &existed);
  ASSERT_TRUE(first.ok());
  // Bob's key is his own: he gets a new job, never alice's.
  auto second = store->CreateJob(bob, &existed);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(existed);
  EXPECT_NE(second->id(), first->id());
  EXPECT_EQ(second->owner(), "bob");
  auto again = store->CreateJob(alice, &existed);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(existed);
  EXPECT_EQ(again->id(), first->id());
}

TEST_F(StoreTest, QueueOrderIsPriorityThenAge) {
  auto store = Open();
  ASSERT_TRUE(store->CreateJob(Spec(0)).ok());   // 1
  ASSERT_TRUE(store->CreateJob(Spec(5)).ok());   // 2
  ASSERT_TRUE(store->CreateJob(Spec(5)).ok());   // 3
  ASSERT_TRUE(store->CreateJob(Spec(-1)).ok());  // 4
  auto queued = store->QueuedJobs();
  ASSERT_TRUE(queued.ok());
  std::vector<int64_t> ids;
  for (const Job& job : *queued) ids.push_back(job.id());
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 3, 1, 4}));
}

TEST_F(StoreTest, SweepsAndFilters) {
  auto store = Open();
  Job a = Spec(), b = Spec();
  b.mutable_spec()->set_model("mlp");
  b.mutable_spec()->set_device("cuda:0");
  auto sweep = store->CreateSweep(trainer::v1::SweepSpec(), {a, b, b});
  ASSERT_TRUE(sweep.ok());
  EXPECT_EQ(sweep->job_ids_size(), 3);
  EXPECT_EQ(store->GetSweep(sweep->id())->job_ids_size(), 3);
  EXPECT_EQ(store->GetJob(sweep->job_ids(1))->sweep_id(), sweep->id());
  ASSERT_TRUE(store->CreateJob(Spec()).ok());
  Store::JobFilter by_sweep;
  by_sweep.sweep_id = sweep->id();
  EXPECT_EQ(store->ListJobs(by_sweep, 0, 10)->size(), 3u);
  Store::JobFilter by_model;
  by_model.model = "mlp";
  by_model.device = "cuda:0";
  EXPECT_EQ(store->ListJobs(by_model, 0, 10)->size(), 2u);
  EXPECT_EQ(store->GetSweep(99).status().code(), absl::StatusCode::kNotFound);
}

// A sweep is inserted a chunk of members per transaction; whatever the chunking, it comes back
// whole and in order, and a queue longer than QueuedJobs' page is read in order without repeats.
TEST_F(StoreTest, ALargeSweepIsWholeAndTheQueueIsReadInOrderAcrossPages) {
  auto store = Open();
  std::vector<Job> members;
  for (int i = 0; i < 300; ++i) members.push_back(Spec(i % 3));
  ASSERT_TRUE(store->CreateJob(Spec(1)).ok());
  auto sweep = store->CreateSweep(trainer::v1::SweepSpec(), members);
  ASSERT_TRUE(sweep.ok()) << sweep.status();
  ASSERT_EQ(sweep->job_ids_size(), 300);
  for (int i = 1; i < 300; ++i) EXPECT_EQ(sweep->job_ids(i), sweep->job_ids(i - 1) + 1);
  EXPECT_EQ(store->GetSweep(sweep->id())->job_ids_size(), 300);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(store->CreateJob(Spec(i % 5 - 1)).ok());

  auto queued = store->QueuedJobs();
  ASSERT_TRUE(queued.ok()) << queued.status();
  ASSERT_EQ(queued->size(), 601u);
  EXPECT_EQ(*store->CountQueued(), 601);
  std::set<int64_t> ids;
  for (size_t i = 0; i < queued->size(); ++i) {
    ids.insert((*queued)[i].id());
    if (i == 0) continue;
    const Job& before = (*queued)[i - 1];
    const Job& job = (*queued)[i];
    EXPECT_TRUE(before.priority() > job.priority() ||
                (before.priority() == job.priority() && before.id() < job.id()))
        << "at " << i << ": job " << before.id() << " (priority " << before.priority()
        << ") before job " << job.id() << " (priority " << job.priority() << ")";
  }
  EXPECT_EQ(ids.size(), 601u);
}

// A crash while a sweep was being inserted: its members are never scheduled, and the next
// start-up removes the sweep, its members and their events, and nothing else.
TEST_F(StoreTest, ASweepLeftIncompleteIsNotQueuedAndIsRemovedAtStartUp) {
  int64_t kept_job = 0, kept_sweep = 0;
  {
    auto store = Open();
    kept_job = store->CreateJob(Spec())->id();
    kept_sweep = store->CreateSweep(trainer::v1::SweepSpec(), {Spec(), Spec()})->id();
    // What a daemon killed between two chunks leaves: the sweep marked incomplete, one member.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    const std::string sql = absl::StrCat(
        "BEGIN; INSERT INTO sweeps(id, sweep, complete) VALUES(77, x'', 0);"
        "INSERT INTO jobs(id, state, job, sweep_id) VALUES(500, ",
        static_cast<int>(Job::QUEUED), ", x'', 77);",
        "INSERT INTO events(job_id, seq, payload) VALUES(500, 1, x''); COMMIT;");
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
    EXPECT_EQ(store->QueuedJobs()->size(), 3u);  // the member of sweep 77 is not among them
    EXPECT_EQ(*store->CountQueued(), 3);
  }
  auto store = Open();
  EXPECT_EQ(store->GetJob(500).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->GetSweep(77).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store->ReadEvents(500, 1, 10)->empty());
  EXPECT_TRUE(store->GetJob(kept_job).ok());
  EXPECT_EQ(store->GetSweep(kept_sweep)->job_ids_size(), 2);
  EXPECT_EQ(store->QueuedJobs()->size(), 3u);
}

// A write failing part-way through a sweep's chunks: the sweep is refused with the cause and
// none of it stays, neither rows nor a quota reservation; the next sweep is whole.
TEST_F(StoreTest, AFailedChunkLeavesNoPartOfTheSweep) {
  FaultySqliteVfs vfs;
  auto store = Open();
  ASSERT_TRUE(store->CreateJob(Spec()).ok());
  std::vector<Job> members;
  for (int i = 0; i < 200; ++i) {
    members.push_back(Spec());
    members.back().set_owner("alice");
  }
  vfs.FailNextSync(SQLITE_IOERR_FSYNC, /*passing=*/2);  // the sweep's row and one chunk commit
  auto refused = store->CreateSweep(trainer::v1::SweepSpec(), members, /*max_queued=*/200);
  EXPECT_EQ(vfs.failures(), 1);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInternal) << refused.status();
  EXPECT_EQ(store->QueuedJobs()->size(), 1u);
  Store::JobFilter any;
  EXPECT_EQ(store->ListJobs(any, 0, 1000)->size(), 1u);
  auto sweep = store->CreateSweep(trainer::v1::SweepSpec(), members, /*max_queued=*/200);
  ASSERT_TRUE(sweep.ok()) << sweep.status();
  EXPECT_EQ(sweep->job_ids_size(), 200);
  // Ids are never reused (AUTOINCREMENT): the refused sweep had committed a chunk when it failed.
  EXPECT_GT(sweep->job_ids(0), 1 + 48);
  members.resize(1);
  EXPECT_EQ(store->CreateSweep(trainer::v1::SweepSpec(), members, 200).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(StoreTest, Settings) {
  {
    auto store = Open();
    EXPECT_EQ(*store->GetSetting("paused"), "");
    ASSERT_TRUE(store->SetSetting("paused", "1").ok());
    ASSERT_TRUE(store->SetSetting("paused", "yes").ok());
  }
  EXPECT_EQ(*Open()->GetSetting("paused"), "yes");
}

// A database written by schema version 1 (the walking skeleton) opens, migrated, with its jobs.
TEST_F(StoreTest, OpensAVersion1Database) {
  std::filesystem::copy_file(TRAIND_TESTDATA "/traind_v1.db", path_);
  auto store = Open();
  auto job = store->GetJob(1);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec().model(), "lenet5");
  EXPECT_EQ(job->state(), Job::SUCCEEDED);
  EXPECT_EQ(store->ReadEvents(1, 1, 100)->size(), 10u);
  Store::JobFilter filter;
  filter.model = "lenet5";  // the new column was backfilled from the job blob
  EXPECT_EQ(store->ListJobs(filter, 0, 10)->size(), 1u);
  EXPECT_EQ(store->CreateJob(Spec())->id(), 2);
}

// Schema 11 keeps whether a search's width was decided side by side (MPS) in a column; a
// database of version 10 said so only in the decision's words, and is backfilled from them.
TEST_F(StoreTest, ASearchPackedSideBySideBeforeTheColumnIsBackfilled) {
  trainer::v1::SweepSpec spec;
  *spec.mutable_base() = Spec().spec();
  spec.mutable_search()->set_trials(4);
  int64_t side_by_side = 0, in_turns = 0;
  {
    auto store = Open();
    side_by_side = store->CreateSearch(spec, "alice", "")->id();
    in_turns = store->CreateSearch(spec, "alice", "")->id();
    ASSERT_TRUE(store
                    ->SaveSearchPacking(side_by_side, 7,
                                        "7 trials per GPU side by side (MPS), bounded by memory",
                                        true)
                    .ok());
    ASSERT_TRUE(
        store->SaveSearchPacking(in_turns, 3, "3 trials per GPU, bounded by memory", false).ok());
    EXPECT_TRUE(store->GetSearch(side_by_side)->pack_side_by_side);
    EXPECT_FALSE(store->GetSearch(in_turns)->pack_side_by_side);
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "ALTER TABLE searches DROP COLUMN pack_side_by_side; "
                         "PRAGMA user_version = 10;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  auto store = Open();
  EXPECT_TRUE(store->GetSearch(side_by_side)->pack_side_by_side);
  EXPECT_FALSE(store->GetSearch(in_turns)->pack_side_by_side);
  EXPECT_EQ(store->GetSearch(in_turns)->pack_width, 3);
}

TEST_F(StoreTest, AJobThatAnUnfinishedJobNeedsIsNotDeletedWithoutForce) {
  auto store = Open();
  const int64_t source = store->CreateJob(Spec())->id();
  const int64_t other = store->CreateJob(Spec())->id();
  JobEvent ended;
  ended.mutable_state_change()->set_state(Job::SUCCEEDED);
  ASSERT_TRUE(store->AppendEvent(source, ended).ok());
  ASSERT_TRUE(store->AppendEvent(other, ended).ok());
  Job after = Spec();
  after.add_after(source);
  const int64_t waiting = store->CreateJob(after)->id();
  Job init = Spec();
  init.mutable_spec()->set_init_from(absl::StrCat(source, ":final"));
  init.add_after(source);  // both ways at once: named once
  const int64_t starting = store->CreateJob(init)->id();

  absl::StatusOr<std::vector<std::string>> refused = store->DeleteJob(source);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            absl::StrCat("job ", source, " is needed by unfinished jobs ", waiting, ", ", starting,
                         " (--after or --init-from); cancel or delete them first, or delete with "
                         "--force (they will fail)"));
  EXPECT_TRUE(store->GetJob(source).ok());    // nothing lost
  EXPECT_TRUE(store->DeleteJob(other).ok());  // a job nobody needs goes as before

  // Once the dependents have ended, nothing needs it.
  JobEvent cancelled;
  cancelled.mutable_state_change()->set_state(Job::CANCELLED);
  ASSERT_TRUE(store->AppendEvent(waiting, cancelled).ok());
  EXPECT_EQ(store->DeleteJob(source).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store->AppendEvent(starting, cancelled).ok());
  EXPECT_TRUE(store->DeleteJob(source).ok());
}

TEST_F(StoreTest, ForceDeletesAJobThatOthersNeed) {
  auto store = Open();
  const int64_t source = store->CreateJob(Spec())->id();
  JobEvent ended;
  ended.mutable_state_change()->set_state(Job::FAILED);
  ASSERT_TRUE(store->AppendEvent(source, ended).ok());
  Job after = Spec();
  after.add_after(source);
  ASSERT_TRUE(store->CreateJob(after).ok());
  EXPECT_TRUE(store->DeleteJob(source, /*force=*/true).ok());
  EXPECT_EQ(store->GetJob(source).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, ASweepWhoseMemberAnUnfinishedJobNeedsIsNotDeleted) {
  auto store = Open();
  auto sweep = store->CreateSweep(trainer::v1::SweepSpec(), {Spec(), Spec()});
  ASSERT_TRUE(sweep.ok()) << sweep.status();
  JobEvent ended;
  ended.mutable_state_change()->set_state(Job::SUCCEEDED);
  for (int64_t id : sweep->job_ids()) ASSERT_TRUE(store->AppendEvent(id, ended).ok());
  Job init = Spec();
  init.mutable_spec()->set_init_from(absl::StrCat(sweep->job_ids(1), ":best"));
  ASSERT_TRUE(store->CreateJob(init).ok());
  EXPECT_EQ(store->DeleteSweep(sweep->id(), nullptr).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(store->GetJob(sweep->job_ids(0)).ok());  // the transaction took nothing
}

TEST_F(StoreTest, UnknownJobIsNotFound) {
  auto store = Open();
  EXPECT_EQ(store->GetJob(42).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->AppendEvent(42, JobEvent()).status().code(), absl::StatusCode::kNotFound);
}

// A write or fsync of the database failing (disk full, I/O error): the event is refused with
// the cause, nothing committed before is lost, the next event takes the next seq (no gap), and
// the file reopens whole.
TEST_F(StoreTest, AFailedWriteOrSyncLosesNothingCommitted) {
  FaultySqliteVfs vfs;  // before the store, which writes through it, and gone after it
  {
    auto store = Open();
    const int64_t id = store->CreateJob(Spec())->id();
    struct Fault {
      bool sync;
      int error;
      absl::StatusCode code;
      const char* says;
    };
    const Fault faults[] = {
        {false, SQLITE_FULL, absl::StatusCode::kResourceExhausted, "disk full"},
        {false, SQLITE_IOERR_WRITE, absl::StatusCode::kInternal, "disk I/O error"},
        {true, SQLITE_IOERR_FSYNC, absl::StatusCode::kInternal, "disk I/O error"},
    };
    int64_t seq = 1;
    for (const Fault& fault : faults) {
      SCOPED_TRACE(fault.says);
      JobEvent step;
      step.mutable_step()->set_batch(static_cast<int32_t>(seq));
      if (fault.sync) {
        vfs.FailNextSync(fault.error);
      } else {
        vfs.FailNextWrite(fault.error);
      }
      const int failures = vfs.failures();
      auto refused = store->AppendEvent(id, step);
      EXPECT_EQ(vfs.failures(), failures + 1);
      EXPECT_EQ(refused.status().code(), fault.code) << refused.status();
      EXPECT_NE(refused.status().message().find(fault.says), std::string::npos) << refused.status();
      EXPECT_EQ(store->GetJob(id)->last_seq(), seq);  // not stored
      auto stored = store->AppendEvent(id, step);
      ASSERT_TRUE(stored.ok()) << stored.status();
      EXPECT_EQ(stored->seq(), ++seq);
    }
  }
  auto store = Open();  // quick_check passes
  auto events = store->ReadEvents(1, 1, 100);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 4u);
  for (size_t i = 0; i < events->size(); ++i) EXPECT_EQ((*events)[i].seq(), int64_t(i) + 1);
  EXPECT_EQ(store->GetJob(1)->last_seq(), 4);
}

TEST_F(StoreTest, NotADatabaseIsDataLoss) {
  { std::ofstream(path_) << std::string(8192, 'x'); }
  auto store = Store::Open(path_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_NE(store.status().message().find("not a database"), std::string::npos) << store.status();
  // And the file is left as it was, for whoever wants to look at it.
  EXPECT_EQ(std::filesystem::file_size(path_), 8192u);
}

TEST_F(StoreTest, ADatabaseCutShortIsDataLoss) {
  {
    auto store = Open();
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(store->CreateJob(Spec()).ok());
  }
  std::filesystem::resize_file(path_, 4096 + 100);  // the header page and a torn second page
  std::filesystem::remove(path_ + "-wal");
  auto store = Store::Open(path_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
}

}  // namespace
}  // namespace traind
