#include "server/event_hub.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(EventHubTest, WakesWhenTheSeqArrives) {
  EventHub hub;
  int woken = 0;
  hub.WaitFor(1, 3, [&] { ++woken; });
  hub.Publish(1, 2);
  EXPECT_EQ(woken, 0);
  hub.Publish(2, 5);  // another job
  EXPECT_EQ(woken, 0);
  hub.Publish(1, 3);
  EXPECT_EQ(woken, 1);
  hub.Publish(1, 4);
  EXPECT_EQ(woken, 1);  // at most once
}

TEST(EventHubTest, AlreadyPublishedWakesAtOnce) {
  EventHub hub;
  hub.Publish(7, 10);
  bool woken = false;
  hub.WaitFor(7, 9, [&] { woken = true; });
  EXPECT_TRUE(woken);
}

}  // namespace
}  // namespace traind
