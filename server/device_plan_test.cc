#include "server/device_plan.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

using trainer::v1::Job;
using Devices = std::vector<std::string>;

const DevicePlan kTwoGpus({"cuda:0", "cuda:1"}, {{"cpu", 2}});

Job OnDevice(const std::string& device) {
  Job job;
  job.mutable_spec()->set_device(device);
  return job;
}

Job OnGpus(int gpus) {
  Job job;
  job.mutable_spec()->set_device("cuda");
  job.mutable_spec()->set_gpus(gpus);
  return job;
}

Job OnListed(const std::string& devices) {
  Job job;
  job.mutable_spec()->set_device("cuda");
  job.mutable_spec()->set_devices(devices);
  return job;
}

HeldDevices Single(const std::string& device) { return HeldDevices{{device}, false, false}; }
HeldDevices Whole(Devices devices) { return HeldDevices{std::move(devices), true, false}; }

TEST(DevicePlanTest, GpusTakesFreeGpusWhole) {
  EXPECT_EQ(kTwoGpus.Place(OnGpus(2), {}, {}), (Devices{"cuda:0", "cuda:1"}));
  // One job on cuda:0 leaves one GPU: a two-GPU job waits, a one-GPU job takes cuda:1.
  EXPECT_EQ(kTwoGpus.Place(OnGpus(2), {Single("cuda:0")}, {}), std::nullopt);
  EXPECT_EQ(kTwoGpus.Place(OnGpus(1), {Single("cuda:0")}, {}), (Devices{"cuda:1"}));
  // Nothing shares a data-parallel job's GPUs, whatever the slots.
  const DevicePlan shared({"cuda:0", "cuda:1"}, {{"cuda", 4}});
  EXPECT_EQ(shared.Place(OnDevice("cuda:0"), {Whole({"cuda:0", "cuda:1"})}, {}), std::nullopt);
  EXPECT_EQ(shared.Place(OnGpus(1), {Whole({"cuda:0", "cuda:1"})}, {}), std::nullopt);
  EXPECT_EQ(shared.Place(OnDevice("cuda:1"), {Single("cuda:1")}, {}), (Devices{"cuda:1"}));
  // The CPU is another device.
  EXPECT_EQ(kTwoGpus.Place(OnDevice("cpu"), {Whole({"cuda:0", "cuda:1"})}, {}), (Devices{"cpu"}));
}

Job OnHosts(const std::string& device, int processes) {
  Job job;
  job.mutable_spec()->set_device(device);
  job.mutable_spec()->set_hosts("a,b");
  job.mutable_spec()->set_processes(processes);
  return job;
}

TEST(DevicePlanTest, AJobOnSeveralHostsTakesItsShareHereWhole) {
  // 2 ranks on 2 hosts: one here, and the CPU whole even with slots to share it (it waits in
  // collectives for the other host's rank).
  const DevicePlan cpu_shared({"cuda:0", "cuda:1"}, {{"cpu", 4}});
  EXPECT_EQ(cpu_shared.Place(OnHosts("cpu", 0), {}, {}), (Devices{"cpu"}));
  EXPECT_EQ(cpu_shared.Place(OnHosts("cpu", 0), {Single("cpu")}, {}), std::nullopt);
  EXPECT_EQ(cpu_shared.Place(OnDevice("cpu"), {Whole({"cpu"})}, {}), std::nullopt);
  // 4 GPU ranks on 2 hosts: two GPUs here, free ones only, never shared.
  EXPECT_EQ(kTwoGpus.Place(OnHosts("cuda", 4), {}, {}), (Devices{"cuda:0", "cuda:1"}));
  EXPECT_EQ(kTwoGpus.Place(OnHosts("cuda", 4), {Single("cuda:1")}, {}), std::nullopt);
  EXPECT_EQ(kTwoGpus.Place(OnHosts("cuda", 2), {Single("cuda:0")}, {}), (Devices{"cuda:1"}));
  // More GPU ranks per host than this machine has: it can never start here.
  EXPECT_EQ(kTwoGpus.Feasible(OnHosts("cuda", 6)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(kTwoGpus.Feasible(OnHosts("cuda", 4)).ok());
}

TEST(DevicePlanTest, OneGpuGoesToTheLeastBusy) {
  const DevicePlan shared({"cuda:0", "cuda:1"}, {{"cuda", 2}});
  EXPECT_EQ(shared.Place(OnGpus(1), {}, {}), (Devices{"cuda:0"}));
  EXPECT_EQ(shared.Place(OnGpus(1), {Single("cuda:0")}, {}), (Devices{"cuda:1"}));
  EXPECT_EQ(shared.Place(OnGpus(1), {Single("cuda:0"), Single("cuda:1")}, {}), (Devices{"cuda:0"}));
  EXPECT_EQ(
      shared.Place(OnGpus(1),
                   {Single("cuda:0"), Single("cuda:1"), Single("cuda:0"), Single("cuda:1")}, {}),
      std::nullopt);
}

TEST(DevicePlanTest, ListedDevicesMustAllBeIdle) {
  EXPECT_EQ(kTwoGpus.Place(OnListed("cuda:1,cuda:0"), {}, {}), (Devices{"cuda:1", "cuda:0"}));
  EXPECT_EQ(kTwoGpus.Place(OnListed("cuda:0,cuda:1"), {Single("cuda:1")}, {}), std::nullopt);
  EXPECT_EQ(kTwoGpus.Place(OnListed("cuda:1"), {Single("cuda:0")}, {}), (Devices{"cuda:1"}));
}

TEST(DevicePlanTest, CpuRanksTakeTheWholeCpu) {
  Job ranks = OnDevice("cpu");
  ranks.mutable_spec()->set_processes(2);
  EXPECT_EQ(kTwoGpus.Place(ranks, {}, {}), (Devices{"cpu", "cpu"}));
  EXPECT_EQ(kTwoGpus.Place(ranks, {Single("cpu")}, {}), std::nullopt);
  EXPECT_EQ(kTwoGpus.Place(OnDevice("cpu"), {Whole({"cpu", "cpu"})}, {}), std::nullopt);
  // Two slots: two one-process jobs share the CPU, a third waits.
  EXPECT_EQ(kTwoGpus.Place(OnDevice("cpu"), {Single("cpu")}, {}), (Devices{"cpu"}));
  EXPECT_EQ(kTwoGpus.Place(OnDevice("cpu"), {Single("cpu"), Single("cpu")}, {}), std::nullopt);
}

TEST(DevicePlanTest, AWaitingMultiGpuJobHoldsItsGpusAgainstLaterJobs) {
  // The queue: a two-GPU job that cannot start (cuda:0 busy), then a one-GPU job. Without the
  // hold the second would take cuda:1 and the first could wait forever behind such jobs.
  const std::set<std::string> held = kTwoGpus.Hold(OnGpus(2));
  EXPECT_EQ(held, (std::set<std::string>{"cuda:0", "cuda:1"}));
  EXPECT_EQ(kTwoGpus.Place(OnDevice("cuda:1"), {Single("cuda:0")}, held), std::nullopt);
  EXPECT_EQ(kTwoGpus.Place(OnGpus(1), {Single("cuda:0")}, held), std::nullopt);
  EXPECT_EQ(kTwoGpus.Place(OnDevice("cpu"), {Single("cuda:0")}, held), (Devices{"cpu"}));
  EXPECT_EQ(kTwoGpus.Hold(OnListed("cuda:1,cuda:0")), (std::set<std::string>{"cuda:0", "cuda:1"}));
  EXPECT_TRUE(kTwoGpus.Hold(OnDevice("cuda:0")).empty());
}

TEST(DevicePlanTest, LanesAreHowManyJobsLikeOneRunAtOnce) {
  EXPECT_EQ(kTwoGpus.Lanes(OnDevice("cpu").spec()), 2);
  EXPECT_EQ(kTwoGpus.Lanes(OnGpus(1).spec()), 2);  // either GPU, one slot each
  EXPECT_EQ(kTwoGpus.Lanes(OnDevice("cuda:1").spec()), 1);
  EXPECT_EQ(kTwoGpus.Lanes(OnGpus(2).spec()), 1);  // takes its GPUs whole
}

TEST(DevicePlanTest, AJobThisMachineCanNeverRunIsInfeasible) {
  EXPECT_TRUE(kTwoGpus.Feasible(OnGpus(2)).ok());
  EXPECT_TRUE(kTwoGpus.Feasible(OnDevice("cpu")).ok());
  EXPECT_EQ(kTwoGpus.Feasible(OnGpus(3)).message(),
            "gpus: 3 requested, this machine has 2 (cuda:0, cuda:1)");
  EXPECT_EQ(kTwoGpus.Feasible(OnListed("cuda:0,cuda:2")).message(),
            "devices: cuda:2 is not on this machine, which has 2 (cuda:0, cuda:1)");
  const DevicePlan no_gpu({}, {});
  EXPECT_EQ(no_gpu.Feasible(OnGpus(1)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(no_gpu.Feasible(OnGpus(1)).message(), "gpus: 1 requested, this machine has no GPU");
}

TEST(DevicePlanTest, AnExclusiveJobRunsAlone) {
  Job exclusive = OnDevice("cpu");
  exclusive.set_exclusive(true);
  EXPECT_EQ(kTwoGpus.Place(exclusive, {}, {}), (Devices{"cpu"}));
  EXPECT_EQ(kTwoGpus.Place(exclusive, {Single("cuda:1")}, {}), std::nullopt);
  EXPECT_EQ(kTwoGpus.Place(OnDevice("cuda:1"), {HeldDevices{{"cpu"}, false, true}}, {}),
            std::nullopt);
}

// A job on Slurm takes nothing of this machine's and waits for nothing here but a "slurm" slot;
// this machine's jobs do not wait for it, exclusive ones included.
TEST(DevicePlanTest, SlurmJobsTakeNothingHereAndCountOnlyAgainstSlurmSlots) {
  Job on_slurm = OnDevice("cpu");
  on_slurm.mutable_spec()->set_backend("slurm");
  on_slurm.mutable_spec()->set_processes(4);
  on_slurm.set_exclusive(true);  // a sweep member
  const HeldDevices remote{{"slurm"}, false, false, true};
  EXPECT_EQ(kTwoGpus.Place(on_slurm, {Whole({"cpu", "cpu"}), Single("cuda:0")}, {"cuda:1"}),
            (Devices{"slurm"}));
  Job exclusive = OnDevice("cpu");
  exclusive.set_exclusive(true);
  EXPECT_EQ(kTwoGpus.Place(exclusive, {remote, remote}, {}), (Devices{"cpu"}));
  EXPECT_TRUE(kTwoGpus.Hold(on_slurm).empty());
  const DevicePlan two_on_slurm({}, {{"slurm", 2}});
  EXPECT_EQ(two_on_slurm.Place(on_slurm, {remote}, {}), (Devices{"slurm"}));
  EXPECT_EQ(two_on_slurm.Place(on_slurm, {remote, remote}, {}), std::nullopt);
  EXPECT_EQ(kTwoGpus.SlotsOf("slurm"), DevicePlan::kDefaultSlurmJobs);
}

}  // namespace
}  // namespace traind
