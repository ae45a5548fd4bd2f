#include "common/cpu_threads.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <string>

namespace traind {
namespace {

TEST(CpuThreadsTest, LeavesOneCoreAndSharesTheRest) {
  EXPECT_EQ(ChooseCpuThreads({2, 2, 0}, 1, "CPU job at a time").threads, 1);
  EXPECT_EQ(ChooseCpuThreads({16, 16, 0}, 1, "CPU job at a time").threads, 15);
  EXPECT_EQ(ChooseCpuThreads({16, 16, 0}, 2, "CPU jobs at a time").threads, 7);
  EXPECT_EQ(ChooseCpuThreads({16, 16, 0}, 32, "ranks").threads, 1);  // never none
  EXPECT_EQ(ChooseCpuThreads({1, 1, 0}, 1, "CPU job at a time").threads, 1);
}

// What the daemon bounds a search's trials per GPU by (one launching host thread each).
TEST(CpuThreadsTest, UsableCoresArePhysicalWithinTheQuota) {
  EXPECT_EQ(UsableCores({32, 16, 0}), 16);
  EXPECT_EQ(UsableCores({32, 16, 2.5}), 3);
  std::string what;
  EXPECT_EQ(UsableCores({32, 16, 4}, &what), 4);
  EXPECT_EQ(what, "16 physical cores (32 CPUs), a cgroup quota of 4 CPUs");
}

TEST(CpuThreadsTest, CountsCoresNotTheirSmtSiblingsAndHonoursAQuota) {
  EXPECT_EQ(ChooseCpuThreads({16, 8, 0}, 1, "CPU job at a time").threads, 7);
  EXPECT_EQ(ChooseCpuThreads({16, 8, 2.5}, 1, "CPU job at a time").threads, 2);  // 3 CPUs, 1 kept
  EXPECT_EQ(ChooseCpuThreads({16, 8, 16}, 1, "CPU job at a time").threads, 7);   // quota above
}

TEST(CpuThreadsTest, TheExplanationSaysWhy) {
  const CpuThreads chosen = ChooseCpuThreads({16, 8, 2.5}, 1, "CPU job at a time");
  EXPECT_EQ(chosen.explanation,
            "2 intra-op threads: 8 physical cores (16 CPUs), a cgroup quota of 2.5 CPUs, one left "
            "for the daemon and clients; 1 CPU job at a time (--threads N chooses)");
}

TEST(CpuThreadsTest, AnExclusiveBenchmarkTakesTheWholeMachine) {
  const CpuThreads chosen = WholeMachineThreads({2, 2, 0}, "a benchmark that runs alone");
  EXPECT_EQ(chosen.threads, 2);
  EXPECT_EQ(chosen.explanation,
            "2 intra-op threads: 2 physical cores, the whole machine (a benchmark that runs "
            "alone) (--threads N chooses)");
  EXPECT_EQ(WholeMachineThreads({16, 8, 2.5}, "x").threads, 3);    // a quota, in whole CPUs
  EXPECT_EQ(WholeMachineThreads({16, 16, 0, 4}, "x").threads, 4);  // OMP_NUM_THREADS caps it
}

// An OMP_NUM_THREADS someone set (torchrun does; so do the integration tests, which run several
// daemons on one machine) caps the choice, and the log says so; it never raises it.
TEST(CpuThreadsTest, OmpNumThreadsCapsTheChoice) {
  CpuFacts facts{16, 16, 0, 2};
  const CpuThreads capped = ChooseCpuThreads(facts, 1, "CPU job at a time");
  EXPECT_EQ(capped.threads, 2);
  EXPECT_EQ(capped.explanation,
            "2 intra-op threads: 16 physical cores, one left for the daemon and clients; 1 CPU "
            "job at a time; at most OMP_NUM_THREADS=2 (--threads N chooses)");
  facts.omp_num_threads = 64;
  EXPECT_EQ(ChooseCpuThreads(facts, 1, "CPU job at a time").threads, 15);
  EXPECT_EQ(ChooseCpuThreads({2, 2, 0, 8}, 1, "CPU job at a time").threads, 1);
}

// ReadCpuFacts() with the variable `name` set to `value` (nullptr: unset), the variable restored.
CpuFacts ReadWith(const char* name, const char* value) {
  const char* before = std::getenv(name);
  const std::string saved = before == nullptr ? "" : before;
  if (value == nullptr) {
    unsetenv(name);
  } else {
    setenv(name, value, 1);
  }
  const CpuFacts facts = ReadCpuFacts();
  if (before == nullptr) {
    unsetenv(name);
  } else {
    setenv(name, saved.c_str(), 1);
  }
  return facts;
}

// The three variables traind reads: a positive whole number, else 0.
TEST(CpuThreadsTest, ReadsItsEnvironmentVariables) {
  EXPECT_EQ(ReadWith("OMP_NUM_THREADS", "3").omp_num_threads, 3);
  EXPECT_EQ(ReadWith("OMP_NUM_THREADS", "three").omp_num_threads, 0);
  EXPECT_EQ(ReadWith("OMP_NUM_THREADS", nullptr).omp_num_threads, 0);
  EXPECT_EQ(ReadWith("TRAIND_BATCH_SHARDS", "1").batch_shards, 1);
  EXPECT_EQ(ReadWith("TRAIND_BATCH_SHARDS", "-2").batch_shards, 0);
  EXPECT_EQ(ReadWith("TRAIND_BATCH_SHARDS", nullptr).batch_shards, 0);
  EXPECT_EQ(ReadWith("TRAIND_BLAS_THREADS", "2").blas_threads, 2);
  EXPECT_EQ(ReadWith("TRAIND_BLAS_THREADS", "0").blas_threads, 0);
}

TEST(CpuThreadsTest, TheBlasFollowsTheJobUnlessTraindBlasThreadsSays) {
  CpuFacts facts{2, 2, 0};
  EXPECT_EQ(ChooseBlasThreads(facts, 1), 1);
  EXPECT_EQ(ChooseBlasThreads(facts, 7), 7);
  EXPECT_EQ(ChooseBlasThreads(facts, 0), 1);  // never none
  facts.blas_threads = 2;
  EXPECT_EQ(ChooseBlasThreads(facts, 1), 2);
}

// A share of 2 to 4 cores (the daemon's included) is split into batch shards; one core, or a
// large machine, keeps intra-op threads.
TEST(CpuThreadsTest, BatchShardsOnAFewCoresOnly) {
  EXPECT_EQ(ChooseBatchShards({2, 2, 0}, 1, "CPU job at a time").shards, 2);
  EXPECT_EQ(ChooseBatchShards({4, 4, 0}, 1, "CPU job at a time").shards, 4);
  EXPECT_EQ(ChooseBatchShards({8, 4, 0}, 1, "CPU job at a time").shards, 4);  // SMT counted once
  EXPECT_EQ(ChooseBatchShards({1, 1, 0}, 1, "CPU job at a time").shards, 1);
  EXPECT_EQ(ChooseBatchShards({2, 2, 0}, 2, "CPU jobs at a time").shards, 1);  // a core each
  EXPECT_EQ(ChooseBatchShards({16, 16, 0}, 1, "CPU job at a time").shards, 1);
  EXPECT_EQ(ChooseBatchShards({16, 16, 0}, 4, "CPU jobs at a time").shards, 4);
  EXPECT_EQ(ChooseBatchShards({16, 16, 2.5}, 1, "CPU job at a time").shards, 2);  // whole CPUs
  EXPECT_EQ(ChooseBatchShards({2, 2, 1.5}, 1, "CPU job at a time").shards, 1);    // of a quota
}

TEST(CpuThreadsTest, BatchShardsFollowOmpNumThreadsAndTraindBatchShards) {
  CpuFacts facts{4, 4, 0, 2};  // OMP_NUM_THREADS=2
  BatchShards chosen = ChooseBatchShards(facts, 1, "CPU job at a time");
  EXPECT_EQ(chosen.shards, 2);
  EXPECT_EQ(chosen.explanation, "4 physical cores, 1 CPU job at a time; at most OMP_NUM_THREADS=2");
  facts.batch_shards = 1;  // TRAIND_BATCH_SHARDS=1: off
  EXPECT_EQ(ChooseBatchShards(facts, 1, "CPU job at a time").shards, 1);
  facts.batch_shards = 3;
  chosen = ChooseBatchShards(facts, 1, "CPU job at a time");
  EXPECT_EQ(chosen.shards, 3);
  EXPECT_EQ(chosen.explanation, "TRAIND_BATCH_SHARDS=3");
}

TEST(CpuThreadsTest, ReadsThisMachine) {
  const CpuFacts facts = ReadCpuFacts();
  EXPECT_GE(facts.logical_cpus, 1);
  EXPECT_GE(facts.physical_cores, 1);
  EXPECT_LE(facts.physical_cores, facts.logical_cpus);
  EXPECT_GE(facts.quota_cpus, 0);
}

}  // namespace
}  // namespace traind
