#include "engine/cpu_threads.h"

#include <gtest/gtest.h>

namespace traind {
namespace {

TEST(CpuThreadsTest, LeavesOneCoreAndSharesTheRest) {
  EXPECT_EQ(ChooseCpuThreads({2, 2, 0}, 1, "CPU job at a time").threads, 1);
  EXPECT_EQ(ChooseCpuThreads({16, 16, 0}, 1, "CPU job at a time").threads, 15);
  EXPECT_EQ(ChooseCpuThreads({16, 16, 0}, 2, "CPU jobs at a time").threads, 7);
  EXPECT_EQ(ChooseCpuThreads({16, 16, 0}, 32, "ranks").threads, 1);  // never none
  EXPECT_EQ(ChooseCpuThreads({1, 1, 0}, 1, "CPU job at a time").threads, 1);
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

TEST(CpuThreadsTest, ReadsThisMachine) {
  const CpuFacts facts = ReadCpuFacts();
  EXPECT_GE(facts.logical_cpus, 1);
  EXPECT_GE(facts.physical_cores, 1);
  EXPECT_LE(facts.physical_cores, facts.logical_cpus);
  EXPECT_GE(facts.quota_cpus, 0);
}

}  // namespace
}  // namespace traind
