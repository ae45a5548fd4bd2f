#include "engine/shard_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace traind {
namespace {

TEST(ShardThreadsTest, EveryShardRunsOnceARoundEachOnItsOwnThread) {
  ShardThreads threads(3);
  ASSERT_EQ(threads.shards(), 3);
  for (int round = 0; round < 100; ++round) {
    std::vector<int> runs(3, 0);
    std::vector<std::thread::id> ids(3);
    threads.Run([&](int shard) {
      ++runs[shard];
      ids[shard] = std::this_thread::get_id();
    });
    EXPECT_EQ(runs, std::vector<int>({1, 1, 1})) << "round " << round;
    EXPECT_EQ(ids[0], std::this_thread::get_id());  // shard 0 is the caller's
    EXPECT_NE(ids[1], ids[0]);
    EXPECT_NE(ids[2], ids[0]);
    EXPECT_NE(ids[2], ids[1]);
  }
}

// Rounds further apart than the threads spin: they sleep in between and wake for the next.
TEST(ShardThreadsTest, ThreadsThatWentToSleepWakeForTheNextRound) {
  ShardThreads threads(2);
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::atomic<int> runs{0};
    threads.Run([&](int) { runs.fetch_add(1); });
    EXPECT_EQ(runs.load(), 2) << "round " << round;
  }
}

// The shards run at the same time: each waits until all have started, which would hang if they
// ran one after another.
TEST(ShardThreadsTest, ShardsRunAtOnce) {
  ShardThreads threads(2);
  std::atomic<int> started{0};
  threads.Run([&](int) {
    started.fetch_add(1);
    while (started.load() < 2) std::this_thread::yield();
  });
  EXPECT_EQ(started.load(), 2);
}

TEST(ShardThreadsTest, AShardsExceptionReachesTheCallerAfterAllFinished) {
  ShardThreads threads(2);
  std::atomic<int> finished{0};
  EXPECT_THROW(threads.Run([&](int shard) {
    if (shard == 1) throw std::runtime_error("shard 1 failed");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    finished.fetch_add(1);
  }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 1);
  // The pool goes on after a failed round.
  std::atomic<int> runs{0};
  threads.Run([&](int) { runs.fetch_add(1); });
  EXPECT_EQ(runs.load(), 2);
}

TEST(ShardThreadsTest, OneShardIsTheCallerAlone) {
  ShardThreads threads(1);
  EXPECT_EQ(threads.shards(), 1);
  int runs = 0;
  threads.Run([&](int shard) {
    EXPECT_EQ(shard, 0);
    ++runs;
  });
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace traind
