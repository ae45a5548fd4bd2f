// The scheduler against a fake launcher: real store (SQLite), real processes
// (supervise/fake_worker.cc, which speaks a worker's protocol and then does what the job's name
// says), no LibTorch. What it checks: a job's life from queued to its end, the lanes, an
// exclusive job's turn, cancel, a crash and a shutdown. Every wait is for a state, bounded only
// to fail instead of hanging.
#include "server/scheduler.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "supervise/worker_exit.h"

namespace traind {
namespace {

using trainer::v1::Job;

constexpr absl::Duration kGiveUp = absl::Seconds(60);

// Starts the fake worker for every job, in the mode its spec's name gives ("unlaunchable": an
// error instead); remembers each launch and what else was running then.
class FakeLauncher : public JobLauncher {
 public:
  struct Launched {
    int64_t job_id = 0;
    std::vector<std::string> devices;
    int others_running = 0;  // jobs RUNNING in the store besides this one, at launch
    int cpu_sharers = 0;     // WorkerRequest.cpu_sharers
  };
  explicit FakeLauncher(Store* store) : store_(store) {}

  absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> Launch(
      const trainer::v1::WorkerRequest& request, const std::vector<std::string>& devices) override {
    Launched launched{request.job_id(), devices, 0, request.cpu_sharers()};
    for (int64_t id = 1; id <= 100; ++id) {
      absl::StatusOr<Job> job = store_->GetJob(id);
      if (job.ok() && id != request.job_id() && job->state() == Job::RUNNING) {
        ++launched.others_running;
      }
    }
    {
      absl::MutexLock lock(&mu_);
      launches_.push_back(launched);
    }
    const std::string& mode = request.spec().name();
    if (mode == "unlaunchable") return absl::InternalError("cannot start traind-worker: gone");
    std::vector<std::unique_ptr<WorkerProcess>> ranks;
    absl::StatusOr<std::unique_ptr<WorkerProcess>> worker =
        WorkerProcess::Start(TRAIND_FAKE_WORKER, request, {"FAKE_WORKER_MODE=" + mode});
    if (!worker.ok()) return worker.status();
    ranks.push_back(*std::move(worker));
    return ranks;
  }

  std::vector<Launched> launches() {
    absl::MutexLock lock(&mu_);
    return launches_;
  }

 private:
  Store* const store_;
  absl::Mutex mu_;
  std::vector<Launched> launches_ ABSL_GUARDED_BY(mu_);
};

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("scheduler_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open((dir_ / "traind.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    launcher_ = std::make_unique<FakeLauncher>(store_.get());
  }
  void TearDown() override {
    if (scheduler_) scheduler_->Shutdown();
    scheduler_.reset();
    std::filesystem::remove_all(dir_);
  }

  void StartScheduler(std::map<std::string, int> slots = {}) {
    Scheduler::Options options;
    options.launcher = launcher_.get();
    options.requests.jobs_dir = (dir_ / "jobs").string();
    options.slots = std::move(slots);
    scheduler_ = std::make_unique<Scheduler>(store_.get(), &hub_, std::move(options));
    ASSERT_TRUE(scheduler_->Start().ok());
  }

  // A job on the CPU whose fake worker does `mode`; a trial of search `sweep_id` when not 0.
  int64_t Submit(const std::string& mode, bool exclusive = false, int64_t sweep_id = 0) {
    Job job;
    job.set_sweep_id(sweep_id);
    job.mutable_spec()->set_model("lenet5");
    job.mutable_spec()->set_device("cpu");
    job.mutable_spec()->set_name(mode);
    job.set_exclusive(exclusive);
    absl::StatusOr<Job> created = store_->CreateJob(job);
    EXPECT_TRUE(created.ok()) << created.status();
    if (scheduler_) scheduler_->Wake();
    return created.ok() ? created->id() : 0;
  }

  // The job once it is in `state` (a failed expectation, and the job as it is, after kGiveUp).
  Job WaitFor(int64_t id, Job::State state) {
    const absl::Time give_up = absl::Now() + kGiveUp;
    absl::StatusOr<Job> job = store_->GetJob(id);
    while (job.ok() && job->state() != state && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(10));
      job = store_->GetJob(id);
    }
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return Job();
    EXPECT_EQ(job->state(), state) << "job " << id << ": " << job->DebugString();
    return *job;
  }

  // The reason its last state change gave.
  std::string ReasonOf(int64_t id) {
    absl::StatusOr<std::vector<trainer::v1::JobEvent>> events = store_->ReadEvents(id, 0, 1000);
    std::string reason;
    if (!events.ok()) return reason;
    for (const trainer::v1::JobEvent& event : *events) {
      if (event.has_state_change()) reason = event.state_change().reason();
    }
    return reason;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
  EventHub hub_;
  std::unique_ptr<FakeLauncher> launcher_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerTest, AQueuedJobRunsOnItsDeviceInItsDirectoryAndSucceedsWithItsResult) {
  StartScheduler();
  const int64_t id = Submit("result");
  WaitFor(id, Job::SUCCEEDED);
  const std::vector<FakeLauncher::Launched> launches = launcher_->launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].job_id, id);
  EXPECT_EQ(launches[0].devices, (std::vector<std::string>{"cpu"}));
  EXPECT_TRUE(std::filesystem::is_directory(dir_ / "jobs" / std::to_string(id)));
  // What the worker reported is stored.
  absl::StatusOr<std::vector<trainer::v1::JobEvent>> events = store_->ReadEvents(id, 0, 100);
  ASSERT_TRUE(events.ok());
  bool logged = false, result = false;
  for (const auto& event : *events) {
    logged |= event.has_log() && absl::StrContains(event.log().text(), "fake worker for job");
    result |= event.has_final_result() && event.final_result().test_accuracy() == 0.5;
  }
  EXPECT_TRUE(logged);
  EXPECT_TRUE(result);
}

TEST_F(SchedulerTest, OneCpuSlotRunsQueuedJobsOneAtATimeOldestFirst) {
  const int64_t first = Submit("stop-on-term");
  const int64_t second = Submit("result");
  StartScheduler({{"cpu", 1}});
  WaitFor(first, Job::RUNNING);
  ASSERT_TRUE(scheduler_->Cancel(first).ok());
  WaitFor(first, Job::CANCELLED);
  WaitFor(second, Job::SUCCEEDED);
  const std::vector<FakeLauncher::Launched> launches = launcher_->launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].job_id, first);
  EXPECT_EQ(launches[1].job_id, second);
  EXPECT_EQ(launches[1].others_running, 0);  // the first had ended
}

TEST_F(SchedulerTest, TwoCpuSlotsRunTwoJobsSideBySide) {
  StartScheduler({{"cpu", 2}});
  const int64_t a = Submit("stop-on-term");
  const int64_t b = Submit("stop-on-term");
  WaitFor(a, Job::RUNNING);
  WaitFor(b, Job::RUNNING);
  absl::StatusOr<trainer::v1::QueueState> state = scheduler_->State();
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->running(), 2);
  EXPECT_EQ(scheduler_->RunningJobsByDevice()["cpu"].size(), 2u);
  ASSERT_TRUE(scheduler_->Cancel(a).ok());
  ASSERT_TRUE(scheduler_->Cancel(b).ok());
  WaitFor(a, Job::CANCELLED);
  WaitFor(b, Job::CANCELLED);
}

// A search's trials packed on the CPU lane run side by side beyond its one slot, each worker told
// how many share the cores (WorkerRequest.cpu_sharers: its threads divide them); another job
// waits for the slot and is told nothing.
TEST_F(SchedulerTest, APackedSearchsTrialsShareTheCpuLaneEachToldHowMany) {
  StartScheduler({{"cpu", 1}});
  scheduler_->SetPackWidth(/*sweep_id=*/7, 2, PackedTrials::kWorkersOnCpu);
  const int64_t a = Submit("stop-on-term", false, 7);
  const int64_t b = Submit("stop-on-term", false, 7);
  const int64_t other = Submit("result");
  WaitFor(a, Job::RUNNING);
  WaitFor(b, Job::RUNNING);
  EXPECT_EQ(store_->GetJob(other)->state(), Job::QUEUED);
  ASSERT_TRUE(scheduler_->Cancel(a).ok());
  ASSERT_TRUE(scheduler_->Cancel(b).ok());
  WaitFor(other, Job::SUCCEEDED);
  std::map<int64_t, int> sharers;
  for (const FakeLauncher::Launched& launched : launcher_->launches()) {
    sharers[launched.job_id] = launched.cpu_sharers;
  }
  EXPECT_EQ(sharers, (std::map<int64_t, int>{{a, 2}, {b, 2}, {other, 0}}));
}

// With --slots cpu=2 each slot packs the width: twice as many trials run at once, and each is told
// all of them share the host's cores.
TEST_F(SchedulerTest, PackedTrialsOnSeveralLanesAreToldAllWhoShareTheCores) {
  StartScheduler({{"cpu", 2}});
  scheduler_->SetPackWidth(/*sweep_id=*/7, 2, PackedTrials::kWorkersOnCpu);
  std::vector<int64_t> trials;
  for (int i = 0; i < 4; ++i) trials.push_back(Submit("stop-on-term", false, 7));
  for (const int64_t id : trials) WaitFor(id, Job::RUNNING);  // all four at once
  for (const int64_t id : trials) ASSERT_TRUE(scheduler_->Cancel(id).ok());
  for (const int64_t id : trials) WaitFor(id, Job::CANCELLED);
  const std::vector<FakeLauncher::Launched> launches = launcher_->launches();
  ASSERT_EQ(launches.size(), 4u);
  for (const FakeLauncher::Launched& launched : launches) EXPECT_EQ(launched.cpu_sharers, 4);
}

TEST_F(SchedulerTest, AnExclusiveJobWaitsForTheRunningOneRunsAloneAndIsNotOvertaken) {
  StartScheduler({{"cpu", 4}});
  const int64_t running = Submit("stop-on-term");
  WaitFor(running, Job::RUNNING);
  const int64_t exclusive = Submit("result", /*exclusive=*/true);
  const int64_t behind = Submit("result");
  ASSERT_TRUE(scheduler_->Cancel(running).ok());
  WaitFor(exclusive, Job::SUCCEEDED);
  WaitFor(behind, Job::SUCCEEDED);
  const std::vector<FakeLauncher::Launched> launches = launcher_->launches();
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[1].job_id, exclusive);  // the job behind it did not start first
  EXPECT_EQ(launches[1].others_running, 0);
  EXPECT_EQ(launches[2].job_id, behind);
}

TEST_F(SchedulerTest, AWorkerKilledWithoutACheckpointFailsTheJobAndCountsACrash) {
  StartScheduler();
  const int64_t id = Submit("signal");
  WaitFor(id, Job::FAILED);
  EXPECT_TRUE(absl::StrContains(ReasonOf(id), "signal 9")) << ReasonOf(id);
  EXPECT_EQ(scheduler_->worker_crashes(), 1);
}

TEST_F(SchedulerTest, AJobWhoseProcessesCannotStartFailsSayingWhy) {
  StartScheduler();
  const int64_t id = Submit("unlaunchable");
  WaitFor(id, Job::FAILED);
  EXPECT_EQ(ReasonOf(id), "cannot start traind-worker: gone");
}

TEST_F(SchedulerTest, ShutdownPutsARunningJobBackInTheQueue) {
  StartScheduler();
  const int64_t id = Submit("stop-on-term");
  WaitFor(id, Job::RUNNING);
  scheduler_->Shutdown();
  WaitFor(id, Job::QUEUED);
  EXPECT_EQ(scheduler_->worker_crashes(), 0);
}

TEST_F(SchedulerTest, APausedQueueStartsNothingUntilResumed) {
  StartScheduler();
  ASSERT_TRUE(scheduler_->SetPaused(true).ok());
  const int64_t id = Submit("result");
  absl::StatusOr<trainer::v1::QueueState> state = scheduler_->State();
  ASSERT_TRUE(state.ok());
  EXPECT_TRUE(state->paused());
  EXPECT_EQ(state->queued(), 1);
  ASSERT_TRUE(scheduler_->SetPaused(false).ok());
  WaitFor(id, Job::SUCCEEDED);
  EXPECT_EQ(launcher_->launches().size(), 1u);
}

}  // namespace
}  // namespace traind
