// The scheduler's placement policy without a process: the queue sorted out, then one pass of
// placement over what runs.
#include "server/placement.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace traind {
namespace {

using trainer::v1::Job;
using Devices = std::vector<std::string>;

Job Queued(int64_t id, const std::string& device = "cpu") {
  Job job;
  job.set_id(id);
  job.mutable_spec()->set_model("lenet5");
  job.mutable_spec()->set_device(device);
  return job;
}

Job Exclusive(int64_t id) {
  Job job = Queued(id);
  job.set_exclusive(true);
  return job;
}

Job OnGpus(int64_t id, int gpus) {
  Job job = Queued(id, "cuda");
  job.mutable_spec()->set_gpus(gpus);
  return job;
}

absl::Status MayRun(const Job&) { return absl::OkStatus(); }

// A pass over `ready` that claims every job it is offered; the started ones, in order.
struct Pass {
  std::map<int64_t, Devices> started;
  std::vector<int64_t> order;
  std::set<int64_t> refuse_claim;  // cancelled since the queue was read
  std::set<int64_t> skip;
  int Run(const DevicePlan& plan, const std::vector<Job>& ready,
          std::vector<HeldDevices> holding = {}, const PackWidths& packs = {}) {
    return PlaceReady(
        plan, ready, std::move(holding), [&](const Job& job) { return skip.count(job.id()) > 0; },
        [&](const Job& job, const Devices& devices) {
          if (refuse_claim.count(job.id())) return false;
          started[job.id()] = devices;
          order.push_back(job.id());
          return true;
        },
        packs);
  }
};

TEST(SortQueueTest, AJobWaitsForItsDependenciesToSucceed) {
  Job waiting = Queued(3);
  waiting.add_after(1);
  waiting.add_after(2);
  Job free = Queued(4);
  std::map<int64_t, Job::State> states = {{1, Job::SUCCEEDED}, {2, Job::RUNNING}};
  SortedQueue sorted = SortQueue(
      {waiting, free}, [&](int64_t id) -> absl::StatusOr<Job::State> { return states.at(id); },
      MayRun);
  ASSERT_EQ(sorted.ready.size(), 1u);
  EXPECT_EQ(sorted.ready[0].id(), 4);
  EXPECT_TRUE(sorted.to_end.empty());
  states[2] = Job::SUCCEEDED;
  sorted = SortQueue(
      {waiting, free}, [&](int64_t id) -> absl::StatusOr<Job::State> { return states.at(id); },
      MayRun);
  ASSERT_EQ(sorted.ready.size(), 2u);
  EXPECT_EQ(sorted.ready[0].id(), 3);  // queue order kept
}

TEST(SortQueueTest, AFailedCancelledOrUnreadableDependencyCancelsTheJobNamingIt) {
  const std::map<int64_t, absl::StatusOr<Job::State>> states = {
      {1, Job::FAILED}, {2, Job::CANCELLED}, {3, absl::NotFoundError("no job 3")}};
  std::vector<Job> queued;
  for (int64_t dependency : {1, 2, 3}) {
    Job job = Queued(10 + dependency);
    job.add_after(dependency);
    queued.push_back(job);
  }
  const SortedQueue sorted = SortQueue(
      queued, [&](int64_t id) { return states.at(id); }, MayRun);
  EXPECT_TRUE(sorted.ready.empty());
  ASSERT_EQ(sorted.to_end.size(), 3u);
  for (const SortedQueue::End& end : sorted.to_end) EXPECT_EQ(end.state, Job::CANCELLED);
  EXPECT_EQ(sorted.to_end[0].reason, "dependency 1 ended FAILED");
  EXPECT_EQ(sorted.to_end[1].reason, "dependency 2 ended CANCELLED");
  EXPECT_EQ(sorted.to_end[2].reason, "dependency 3: no job 3");
}

TEST(SortQueueTest, ADependencyIsReadOncePerPassHoweverManyJobsNameIt) {
  std::vector<Job> sweep;
  for (int64_t id = 2; id < 102; ++id) {
    sweep.push_back(Queued(id));
    sweep.back().add_after(1);
  }
  int reads = 0;
  const SortedQueue sorted = SortQueue(
      sweep,
      [&](int64_t) -> absl::StatusOr<Job::State> {
        ++reads;
        return Job::SUCCEEDED;
      },
      MayRun);
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(sorted.ready.size(), 100u);
}

TEST(SortQueueTest, AJobThatCanNeverRunHereFailsWithWhy) {
  const SortedQueue sorted = SortQueue(
      {Queued(1), Queued(2)}, [](int64_t) -> absl::StatusOr<Job::State> { return Job::SUCCEEDED; },
      [](const Job& job) {
        return job.id() == 1 ? absl::PermissionDeniedError("alice may no longer start jobs")
                             : absl::OkStatus();
      });
  ASSERT_EQ(sorted.to_end.size(), 1u);
  EXPECT_EQ(sorted.to_end[0].job_id, 1);
  EXPECT_EQ(sorted.to_end[0].state, Job::FAILED);
  EXPECT_EQ(sorted.to_end[0].reason, "alice may no longer start jobs");
  ASSERT_EQ(sorted.ready.size(), 1u);
}

TEST(PlaceReadyTest, ADeviceRunsAsManyJobsAsItHasSlotsInQueueOrder) {
  Pass one_slot;
  EXPECT_EQ(one_slot.Run(DevicePlan({}, {}), {Queued(1), Queued(2)}), 1);
  EXPECT_EQ(one_slot.order, (std::vector<int64_t>{1}));
  EXPECT_EQ(one_slot.started[1], (Devices{"cpu"}));
  Pass two_slots;
  EXPECT_EQ(two_slots.Run(DevicePlan({}, {{"cpu", 2}}), {Queued(1), Queued(2), Queued(3)}), 2);
  EXPECT_EQ(two_slots.order, (std::vector<int64_t>{1, 2}));
  // What already runs counts.
  Pass busy;
  EXPECT_EQ(busy.Run(DevicePlan({}, {{"cpu", 2}}), {Queued(1), Queued(2)},
                     {HeldDevices{{"cpu"}, false, false}}),
            1);
}

TEST(PlaceReadyTest, CpuAndGpuLanesRunSideBySide) {
  Pass pass;
  EXPECT_EQ(pass.Run(DevicePlan({"cuda:0"}, {}), {Queued(1), Queued(2), OnGpus(3, 1)}), 2);
  EXPECT_EQ(pass.order, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(pass.started[3], (Devices{"cuda:0"}));
}

TEST(PlaceReadyTest, AnExclusiveJobRunsAloneAndNothingOvertakesIt) {
  const DevicePlan plan({"cuda:0"}, {{"cpu", 4}});
  // Something runs: the exclusive job waits, and so does everything behind it.
  Pass waiting;
  EXPECT_EQ(waiting.Run(plan, {Exclusive(1), Queued(2), OnGpus(3, 1)},
                        {HeldDevices{{"cpu"}, false, false}}),
            0);
  // Nothing runs: it starts, and the pass ends with it.
  Pass alone;
  EXPECT_EQ(alone.Run(plan, {Exclusive(1), Queued(2)}), 1);
  EXPECT_EQ(alone.order, (std::vector<int64_t>{1}));
  // Jobs ahead of it start; it then waits for them.
  Pass behind;
  EXPECT_EQ(behind.Run(plan, {Queued(1), Exclusive(2), Queued(3)}), 1);
  EXPECT_EQ(behind.order, (std::vector<int64_t>{1}));
}

TEST(PlaceReadyTest, AWaitingMultiGpuJobKeepsLaterOneGpuJobsOffItsGpus) {
  const DevicePlan plan({"cuda:0", "cuda:1"}, {});
  // cuda:0 busy: the two-GPU job waits and holds cuda:1 against the one-GPU job behind it.
  Pass pass;
  EXPECT_EQ(pass.Run(plan, {OnGpus(1, 2), OnGpus(2, 1), Queued(3)},
                     {HeldDevices{{"cuda:0"}, false, false}}),
            1);
  EXPECT_EQ(pass.order, (std::vector<int64_t>{3}));
}

TEST(PlaceReadyTest, AJobThatCannotBeClaimedOrIsSkippedLeavesItsRoomToTheNext) {
  Pass pass;
  pass.refuse_claim = {1};
  pass.skip = {2};
  EXPECT_EQ(pass.Run(DevicePlan({}, {}), {Queued(1), Queued(2), Queued(3)}), 1);
  EXPECT_EQ(pass.order, (std::vector<int64_t>{3}));
}

TEST(PlaceReadyTest, ASlurmJobHoldsNothingOfThisMachine) {
  Job slurm = Queued(1);
  slurm.mutable_spec()->set_backend("slurm");
  const HeldDevices held = HeldBy(slurm, {"slurm"});
  EXPECT_TRUE(held.remote);
  Pass pass;
  EXPECT_EQ(pass.Run(DevicePlan({}, {}), {Queued(2)}, {held}), 1);
}

Job Trial(int64_t id, int64_t sweep_id, const std::string& device = "cuda") {
  Job job = device == "cuda" ? OnGpus(id, 1) : Queued(id, device);
  job.set_sweep_id(sweep_id);
  return job;
}

TEST(PlaceReadyTest, APackedSearchsTrialsShareAGpuUpToItsWidth) {
  const DevicePlan plan({"cuda:0", "cuda:1"}, {});
  // Width 3 on two GPUs: six trials start, spread over both; the seventh waits.
  Pass pass;
  std::vector<Job> ready;
  for (int64_t id = 1; id <= 7; ++id) ready.push_back(Trial(id, 9));
  EXPECT_EQ(pass.Run(plan, ready, {}, {{9, 3}}), 6);
  std::map<std::string, int> per_gpu;
  for (const auto& [id, devices] : pass.started) ++per_gpu[devices.at(0)];
  EXPECT_EQ(per_gpu, (std::map<std::string, int>{{"cuda:0", 3}, {"cuda:1", 3}}));
  // Unpacked (no width, or another search's) they take a slot each.
  Pass unpacked;
  EXPECT_EQ(unpacked.Run(plan, ready, {}, {{8, 3}}), 2);
  // `--device cuda` (one GPU, any, its own lane) packs alike.
  Pass lane;
  EXPECT_EQ(lane.Run(DevicePlan({"cuda:0"}, {}), {Trial(1, 9, "cuda"), Trial(2, 9, "cuda")}, {},
                     {{9, 2}}),
            2);
}

// Each slot packs the width: `--slots cpu=2` and width 2 run four of the search's trials.
TEST(PlaceReadyTest, EverySlotPacksTheWidth) {
  const DevicePlan plan({}, {{"cpu", 2}});
  Pass pass;
  std::vector<Job> ready;
  for (int64_t id = 1; id <= 5; ++id) ready.push_back(Trial(id, 9, "cpu"));
  EXPECT_EQ(pass.Run(plan, ready, {}, {{9, 2}}), 4);
  Pass unpacked;
  EXPECT_EQ(unpacked.Run(plan, ready, {}, {}), 2);
}

TEST(PlaceReadyTest, PackedTrialsShareOnlyWithTheirOwnSearch) {
  const DevicePlan plan({"cuda:0"}, {});
  // Another job holds the GPU: a packed trial does not join it.
  Pass beside_other;
  EXPECT_EQ(beside_other.Run(plan, {Trial(2, 9)}, {HeldBy(OnGpus(1, 1), {"cuda:0"})}, {{9, 4}}), 0);
  // Another search's trial holds it: no joining either.
  Pass beside_search;
  EXPECT_EQ(beside_search.Run(plan, {Trial(2, 9)}, {HeldBy(Trial(1, 8), {"cuda:0"})}, {{9, 4}}), 0);
  // Its own search's trial holds it: the trial joins; a job of no search behind it does not.
  Pass own;
  EXPECT_EQ(own.Run(plan, {Trial(2, 9), OnGpus(3, 1)}, {HeldBy(Trial(1, 9), {"cuda:0"})}, {{9, 4}}),
            1);
  EXPECT_EQ(own.order, (std::vector<int64_t>{2}));
}

}  // namespace
}  // namespace traind
