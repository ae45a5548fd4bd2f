#include "common/fair_mutex.h"

#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace traind {
namespace {

void WaitForWaiters(FairMutex& mu, int count) {
  while (mu.Waiting() < count) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Threads that queue up behind a holder get the lock in the order they asked for it.
TEST(FairMutexTest, WaitersAreServedInArrivalOrder) {
  FairMutex mu;
  std::vector<int> order;  // guarded by mu
  std::vector<std::thread> threads;
  mu.Lock();
  for (int i = 0; i < 5; ++i) {
    threads.emplace_back([&, i] {
      FairMutexLock lock(&mu);
      order.push_back(i);
    });
    WaitForWaiters(mu, i + 1);  // thread i holds its ticket before thread i + 1 starts
  }
  mu.Unlock();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

// The case it exists for: a thread that unlocks and at once locks again (a long job cut into
// short holds) goes behind a thread already waiting. absl::Mutex lets it take the lock straight
// back (measured: 47 of 50 tries with this sequence), which starved traind's store probes for
// 0.7 s behind holds of 5 ms; with tickets the waiter is next every time.
TEST(FairMutexTest, AThreadThatUnlocksAndRelocksGoesBehindAWaiter) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    FairMutex mu;
    bool waiter_ran = false;  // guarded by mu
    mu.Lock();
    std::thread waiter([&] {
      FairMutexLock lock(&mu);
      waiter_ran = true;
    });
    WaitForWaiters(mu, 1);
    mu.Unlock();
    mu.Lock();
    EXPECT_TRUE(waiter_ran) << "attempt " << attempt;
    mu.Unlock();
    waiter.join();
  }
}

}  // namespace
}  // namespace traind
