// How many of a search's trials share a GPU, from what one measured alone (server/trial_packing.h).
#include "server/trial_packing.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

PackingFacts Measured(double busy, double used_gib, int64_t batch = 128, int host_cores = 16) {
  PackingFacts facts;
  facts.host_cores = host_cores;
  facts.largest_batch = batch;
  facts.alone = AloneFootprint{busy, static_cast<int64_t>(used_gib * kGiB), 80 * kGiB, batch};
  facts.alone->busy_training = busy;  // its run all training: on a tie that names the bound
  return facts;
}

TEST(DecidePackingTest, NothingMeasuredRunsOneTrialPerGpu) {
  PackingFacts facts;
  facts.host_cores = 16;
  EXPECT_EQ(DecidePacking(facts).width, 1);
  EXPECT_EQ(DecidePacking(facts).why, "");
}

TEST(DecidePackingTest, ASmallTrialSharesTheGpuItLeavesIdle) {
  // A trial that kept the GPU busy 12% of its run: 0.9 / 0.12 = 7.5.
  const Packing packing = DecidePacking(Measured(0.12, 1.2));
  EXPECT_EQ(packing.width, 7);
  EXPECT_EQ(
      packing.why,
      "7 trials per GPU, bounded by its busy share while training; alone a trial kept the GPU "
      "busy 12% of the time (12% while training) with 1.2 of 80.0 GiB in use (batch 128)");
}

TEST(DecidePackingTest, ATrialThatFillsTheGpuIsNeverPacked) {
  // ResNet-18 at batch 256.
  const Packing packing = DecidePacking(Measured(0.97, 9.0, 256));
  EXPECT_EQ(packing.width, 1);
  EXPECT_NE(packing.why.find("not packed"), std::string::npos) << packing.why;
  EXPECT_EQ(DecidePacking(Measured(0.5, 1.0)).width, 1);  // 0.9 / 0.5: one
  EXPECT_EQ(DecidePacking(Measured(0.45, 1.0)).width, 2);
}

// Measured on the H100 (docs/benchmarks.md): ResNet-18 at batch 256 on 5,120 random 224 px images,
// 3 epochs, kept the GPU busy 13% of its run (start-up, cuDNN's autotuning and 20 steps an epoch):
// by its run alone three would share the GPU. Its training's share was not read there: 0.97 here
// stands for a training that fills the GPU, which is never packed.
TEST(DecidePackingTest, ATrialWhoseTrainingFillsTheGpuIsNeverPackedHoweverIdleItsStartUp) {
  PackingFacts facts = Measured(0.13, 22.3, 256);
  facts.alone->busy_training = 0.97;
  const Packing packing = DecidePacking(facts);
  EXPECT_EQ(packing.width, 1);
  EXPECT_EQ(packing.why,
            "1 trial per GPU, not packed, bounded by its busy share while training; alone a trial "
            "kept the GPU busy 13% of the time (97% while training) with 22.3 of 80.0 GiB in use "
            "(batch 256)");
  // An MLP's training barely registers (0-3% on the H100): its run and memory bound it.
  facts = Measured(0.03, 1.3, 64);
  facts.alone->busy_training = 0.02;
  EXPECT_EQ(DecidePacking(facts).width, 15);  // 16 host cores, one left to traind
  // Two trials' training fits a GPU that one keeps busy 40% of the time: 0.9 / 0.4.
  facts.alone->busy_training = 0.4;
  EXPECT_EQ(DecidePacking(facts).width, 2);
}

TEST(DecidePackingTest, MemoryBoundsItScaledToTheLargestBatch) {
  // Idle enough for 18, but 20 of 80 GiB each: 72 / 20 = 3.
  Packing packing = DecidePacking(Measured(0.05, 20));
  EXPECT_EQ(packing.width, 3);
  EXPECT_NE(packing.why.find("3 trials per GPU, bounded by memory; alone a trial kept the GPU busy "
                             "5% of the time (5% while training) with 20.0 of 80.0 GiB in use"),
            std::string::npos)
      << packing.why;
  // Read at batch 64 with 10 GiB; a trial may draw 256: 40 GiB each, one fits 0.9 of 80 once.
  PackingFacts facts = Measured(0.05, 10, 64);
  facts.largest_batch = 256;
  packing = DecidePacking(facts);
  EXPECT_EQ(packing.width, 1);
  EXPECT_NE(packing.why.find("not packed, bounded by memory (x4.0 for batch 256)"),
            std::string::npos)
      << packing.why;
}

TEST(DecidePackingTest, HostCoresAndTheUsersCapBoundIt) {
  EXPECT_EQ(DecidePacking(Measured(0.05, 0.5, 128, /*host_cores=*/4)).width, 3);
  PackingFacts capped = Measured(0.05, 0.5);
  capped.max_pack = 2;
  EXPECT_EQ(DecidePacking(capped).width, 2);
  EXPECT_NE(DecidePacking(capped).why.find("max_pack 2"), std::string::npos);
  PackingFacts off = Measured(0.05, 0.5);
  off.max_pack = 1;
  EXPECT_EQ(DecidePacking(off).width, 1);
  off.alone.reset();  // max_pack 1 needs no measurement
  EXPECT_EQ(DecidePacking(off).width, 1);
  EXPECT_EQ(DecidePacking(off).why, "1 trial per GPU (max_pack 1)");
}

TEST(DecidePackingTest, OnTheCpuTrialsDivideTheHostsCores) {
  // A trial that kept 45% of the host's 2 cores busy alone (one thread most of its run): 1 / 0.45
  // = 2.2, and 2 cores hold 2 trials of one core each.
  PackingFacts facts = Measured(0.45, 3.0, 128, /*host_cores=*/2);
  facts.on_cpu = true;
  facts.alone->total_bytes = 24 * kGiB;
  Packing packing = DecidePacking(facts);
  EXPECT_EQ(packing.width, 2);
  EXPECT_EQ(
      packing.why,
      "2 trials at once on the CPU, bounded by its busy share while training; alone a trial "
      "kept the host's 2 cores busy 45% of the time (45% while training) with 3.0 of 24.0 GiB "
      "in use (batch 128)");
  // Every core a trial's own: one trial per core at most (no core left to traind, unlike a GPU's
  // launching threads).
  facts.alone->busy = 0.1;
  facts.alone->busy_training = 0.1;
  EXPECT_EQ(DecidePacking(facts).width, 2);
  EXPECT_NE(DecidePacking(facts).why.find("bounded by 2 host cores"), std::string::npos);
  // A trial that kept more than half the cores busy (LeNet5's batch shards: 65% on 2 cores, where
  // two at once were slower) runs alone.
  facts.alone->busy = 0.65;
  facts.alone->busy_training = 0.9;
  EXPECT_EQ(DecidePacking(facts).width, 1);
  EXPECT_NE(DecidePacking(facts).why.find("1 trial at once on the CPU, not packed"),
            std::string::npos);
  facts.max_pack = 1;
  EXPECT_EQ(DecidePacking(facts).why, "1 trial at once on the CPU (max_pack 1)");
}

// Every lane packs the width and all share the host's cores: 8 GPUs on 16 cores hold one trial
// each, where one GPU held 15; a CPU trial alone on one of 2 slots read against the whole host.
TEST(DecidePackingTest, EveryLanePacksSoTheLanesDivideTheHostsCores) {
  PackingFacts gpus = Measured(0.01, 0.5, 128, /*host_cores=*/16);
  EXPECT_EQ(DecidePacking(gpus).width, 15);
  gpus.lanes = 8;
  EXPECT_EQ(DecidePacking(gpus).width, 1);
  EXPECT_NE(DecidePacking(gpus).why.find("bounded by 16 host cores over 8 GPUs"),
            std::string::npos);
  gpus.lanes = 3;
  EXPECT_EQ(DecidePacking(gpus).width, 5);
  // --slots cpu=2 on 4 cores: a trial alone had 2 of them and kept 24% of the host busy, so 48%
  // of its lane's: 2 per lane, 4 on the host.
  PackingFacts cpu = Measured(0.24, 1.0, 128, /*host_cores=*/4);
  cpu.on_cpu = true;
  cpu.alone->total_bytes = 24 * kGiB;
  EXPECT_EQ(DecidePacking(cpu).width, 4);
  cpu.lanes = 2;
  EXPECT_EQ(DecidePacking(cpu).width, 2);
  cpu.alone->busy = 0.3;  // 60% of its lane's
  cpu.alone->busy_training = 0.3;
  EXPECT_EQ(DecidePacking(cpu).width, 1);
}

// LeNet5-like, side by side, its multiprocessors' share leaving room for 18.
PackingFacts SideBySideLeNet5() {
  PackingFacts facts = Measured(0.5, 2.3, 64);
  facts.largest_batch = 256;
  facts.side_by_side = true;
  facts.alone->busy_training = 0.68;
  facts.alone->sm_active = 0.03;
  facts.alone->sm_active_training = 0.05;
  return facts;
}

// Side by side through MPS, how much of the GPU a trial's kernels filled bounds it, not how long
// they ran: a LeNet5-like trial keeping a kernel running 68% of its training time in a few
// percent of the multiprocessors packs; one that fills them does not.
TEST(DecidePackingTest, SideBySideTheMultiprocessorsShareBoundsIt) {
  PackingFacts facts = SideBySideLeNet5();
  facts.side_by_side = false;
  EXPECT_EQ(DecidePacking(facts).width, 1);  // taking turns: the time share bounds it
  facts.side_by_side = true;
  const Packing packing = DecidePacking(facts);
  EXPECT_EQ(packing.width, 7);
  EXPECT_EQ(packing.why,
            "7 trials per GPU side by side (MPS), bounded by memory (x4.0 for batch 256); alone a "
            "trial kept the GPU busy 50% of the time (68% while training), its multiprocessors 3% "
            "(5% while training) with 2.3 of 80.0 GiB in use (batch 64)");
  facts.alone->sm_active_training = 0.92;  // ResNet-18 at batch 256 fills them
  EXPECT_EQ(DecidePacking(facts).width, 1);
  EXPECT_NE(DecidePacking(facts).why.find(
                "not packed, bounded by its share of the multiprocessors while training"),
            std::string::npos)
      << DecidePacking(facts).why;
  facts.alone->sm_active.reset();  // not read (an older GPU): the time share, as taking turns
  facts.alone->sm_active_training.reset();
  EXPECT_EQ(DecidePacking(facts).width, 1);
  EXPECT_NE(DecidePacking(facts).why.find("bounded by its busy share while training"),
            std::string::npos);
}

// Of the memory in use, only the trial's own reservation grows with the batch.
TEST(DecidePackingTest, OnlyItsOwnMemoryScalesWithTheBatch) {
  PackingFacts facts = SideBySideLeNet5();
  EXPECT_EQ(DecidePacking(facts).width, 7);  // all 2.3 GiB x 4
  // Of the 2.3 GiB, 0.4 were its own (a LeNet5 trial's tensors and cache); the rest, its CUDA
  // context and library handles, does not grow with the batch: 0.9 * 80 / (1.9 + 4 * 0.4) = 20,
  // and now the host's 16 cores bound it.
  facts.alone->batch_bytes = static_cast<int64_t>(0.4 * kGiB);
  EXPECT_EQ(DecidePacking(facts).width, 15);
  EXPECT_EQ(DecidePacking(facts).why,
            "15 trials per GPU side by side (MPS), bounded by 16 host cores; alone a trial kept "
            "the GPU busy 50% of the time (68% while training), its multiprocessors 3% (5% while "
            "training) with 2.3 of 80.0 GiB in use (0.4 GiB its own, batch 64)");
  facts.host_cores = 32;
  facts.alone->sm_active_training = 0.04;  // room for 22
  EXPECT_EQ(DecidePacking(facts).width, 20);
  EXPECT_NE(DecidePacking(facts).why.find("bounded by memory (x4.0 for batch 256)"),
            std::string::npos);
  facts.alone->batch_bytes = 4 * kGiB;  // more than was in use: all of it grows, no more
  EXPECT_EQ(DecidePacking(facts).width, 7);
}

// On a GPU a trial takes as many host cores as its worker kept busy alone, at least one.
TEST(DecidePackingTest, AGpuTrialTakesTheHostCoresItsWorkerKeptBusy) {
  PackingFacts facts = SideBySideLeNet5();
  facts.alone->batch_bytes = static_cast<int64_t>(0.4 * kGiB);  // memory leaves room for 20
  // Its worker kept 1.25 of the 16 cores busy alone (its launching thread and the rest): 15 /
  // 1.25 = 12 trials.
  facts.alone->host_busy = 1.25 / 16;
  EXPECT_EQ(DecidePacking(facts).width, 12);
  EXPECT_NE(DecidePacking(facts).why.find("12 trials per GPU side by side (MPS), bounded by 16 "
                                          "host cores (1.2 a trial); alone"),
            std::string::npos)
      << DecidePacking(facts).why;
  EXPECT_NE(DecidePacking(facts).why.find("(5% while training), its worker 1.2 host cores with"),
            std::string::npos);
  facts.alone->host_busy_training = 2.0 / 16;  // its training kept more busy: that bounds it
  EXPECT_EQ(DecidePacking(facts).width, 7);
  EXPECT_NE(DecidePacking(facts).why.find("its worker 1.2 host cores (2.0 while training) with"),
            std::string::npos)
      << DecidePacking(facts).why;
  facts.alone->host_busy_training.reset();
  facts.alone->host_busy = 0.5 / 16;  // fewer than one: still one core each
  EXPECT_EQ(DecidePacking(facts).width, 15);
}

// A trial whose training was too short to read (one step report) may fill the device: alone.
TEST(DecidePackingTest, ATrainingTooShortToReadIsNotPacked) {
  PackingFacts facts = Measured(0.05, 0.5);
  facts.alone->busy_training.reset();
  EXPECT_EQ(DecidePacking(facts).width, 1);
  EXPECT_NE(
      DecidePacking(facts).why.find("not packed, bounded by its training, too short to measure"),
      std::string::npos)
      << DecidePacking(facts).why;
}

TEST(DecidePackingTest, AnIdleReadingStaysBounded) {
  EXPECT_EQ(DecidePacking(Measured(0.0, 0.1, 128, 128)).width, kMaxPack);
}

trainer::v1::Job Trial(trainer::v1::Job::State state, bool busy) {
  trainer::v1::Job job;
  job.set_state(state);
  job.mutable_spec()->set_batch_size(64);
  auto* step = job.mutable_latest_step();
  step->set_epoch(2);
  if (busy) step->set_device_busy(0.2);
  step->set_device_used_bytes(2 * kGiB);
  step->set_device_total_bytes(80 * kGiB);
  return job;
}

TEST(AloneReadingTest, OnlyARunThatEndedWithTheGpusBusyShare) {
  using trainer::v1::Job;
  EXPECT_FALSE(AloneReading(Job()).has_value());                      // no step yet
  EXPECT_FALSE(AloneReading(Trial(Job::RUNNING, true)).has_value());  // its share so far
  EXPECT_FALSE(AloneReading(Trial(Job::FAILED, true)).has_value());
  EXPECT_FALSE(AloneReading(Trial(Job::SUCCEEDED, false)).has_value());  // no NVML
  std::optional<AloneFootprint> reading = AloneReading(Trial(Job::SUCCEEDED, true));
  ASSERT_TRUE(reading.has_value());
  EXPECT_DOUBLE_EQ(reading->busy, 0.2);
  EXPECT_FALSE(reading->busy_training.has_value());  // one step report: no training window
  Job trained = Trial(Job::SUCCEEDED, true);
  trained.mutable_latest_step()->set_device_busy_training(0.6);
  EXPECT_DOUBLE_EQ(AloneReading(trained)->busy_training.value_or(0), 0.6);
  EXPECT_EQ(reading->used_bytes, 2 * kGiB);
  EXPECT_EQ(reading->batch_size, 64);
  EXPECT_EQ(reading->batch_bytes, 0);  // no reservation said: all of it grows with the batch
  EXPECT_FALSE(reading->host_busy.has_value());
  trained.mutable_latest_step()->set_host_busy(0.05);
  trained.mutable_latest_step()->set_host_busy_training(0.07);
  EXPECT_DOUBLE_EQ(AloneReading(trained)->host_busy.value_or(0), 0.05);
  EXPECT_DOUBLE_EQ(AloneReading(trained)->host_busy_training.value_or(0), 0.07);
  trained.mutable_latest_step()->set_peak_driver_allocated_bytes(kGiB / 2);
  EXPECT_EQ(AloneReading(trained)->batch_bytes, kGiB / 2);
  EXPECT_TRUE(AloneReading(Trial(Job::PAUSED, true)).has_value());  // at its rung
}

// A program's trial: its batch size is the {batch_size} the search drew for it.
TEST(AloneReadingTest, AProgramsBatchSizeIsItsParam) {
  using trainer::v1::Job;
  Job program = Trial(Job::SUCCEEDED, true);
  program.mutable_spec()->clear_batch_size();
  (*program.mutable_spec()->mutable_script()->mutable_params())["batch_size"] = "256";
  std::optional<AloneFootprint> reading = AloneReading(program);
  ASSERT_TRUE(reading.has_value());
  EXPECT_EQ(reading->batch_size, 256);
  (*program.mutable_spec()->mutable_script()->mutable_params())["batch_size"] = "big";
  EXPECT_EQ(AloneReading(program)->batch_size, 0);  // not a number: no scaling from it
}

TEST(AloneReadingTest, TheLargerOfTwoKeepsMemoryWithItsBatch) {
  const AloneFootprint a{0.3, 2 * kGiB, 80 * kGiB, 64};
  const AloneFootprint b{0.1, 3 * kGiB, 80 * kGiB, 128};
  AloneFootprint larger = Larger(a, b);
  EXPECT_DOUBLE_EQ(larger.busy, 0.3);
  EXPECT_FALSE(larger.busy_training.has_value());
  // Training read on both: the busier. Unread on one (a single step report, the likelier for
  // the larger batch): unread, which DecidePacking does not pack.
  AloneFootprint trained_a = a, trained_b = b;
  trained_a.busy_training = 0.2;
  trained_b.busy_training = 0.7;
  EXPECT_DOUBLE_EQ(Larger(trained_a, trained_b).busy_training.value_or(0), 0.7);
  EXPECT_FALSE(Larger(a, trained_b).busy_training.has_value());
  EXPECT_EQ(larger.used_bytes, 3 * kGiB);
  EXPECT_EQ(larger.batch_size, 128);
  AloneFootprint own_a = a, own_b = b;
  own_a.batch_bytes = kGiB;
  own_b.batch_bytes = kGiB / 4;
  EXPECT_EQ(Larger(own_a, own_b).batch_bytes, kGiB / 4);  // b's: read with b's memory and batch
  own_a.host_busy = 0.1;                                  // read on one: that one's
  EXPECT_DOUBLE_EQ(Larger(own_a, own_b).host_busy.value_or(0), 0.1);
  EXPECT_FALSE(Larger(own_a, own_b).host_busy_training.has_value());
}

}  // namespace
}  // namespace traind
