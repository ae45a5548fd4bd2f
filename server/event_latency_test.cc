#include "server/event_latency.h"

#include <gtest/gtest.h>

#include <chrono>

namespace traind {
namespace {

TEST(EventLatencyTest, QuantilesAreWithinABucketOfTheTruth) {
  EventLatency latency;
  // 1..1000 ms, one event each: p50 500 ms, p99 990 ms, max 1000 ms.
  for (int ms = 1; ms <= 1000; ++ms) latency.RecordMicros(EventLatency::kStored, ms * 1000);
  const EventLatency::Quantiles q = latency.Of(EventLatency::kStored);
  EXPECT_EQ(q.count, 1000u);
  EXPECT_GE(q.p50_ms, 500);
  EXPECT_LE(q.p50_ms, 550);  // buckets are 10% wide
  EXPECT_GE(q.p99_ms, 990);
  EXPECT_LE(q.p99_ms, 1000);  // never above the largest seen
  EXPECT_DOUBLE_EQ(q.max_ms, 1000);
  EXPECT_EQ(latency.Of(EventLatency::kReceived).count, 0u);  // points are separate
}

TEST(EventLatencyTest, MeasuresFromTheTimestamp) {
  EventLatency latency;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto stamped_us =
      std::chrono::duration_cast<std::chrono::microseconds>(now).count() - 20000;
  google::protobuf::Timestamp stamped;
  stamped.set_seconds(stamped_us / 1000000);
  stamped.set_nanos(static_cast<int32_t>(stamped_us % 1000000) * 1000);
  latency.Record(EventLatency::kReceived, stamped);
  const EventLatency::Quantiles q = latency.Of(EventLatency::kReceived);
  EXPECT_GE(q.max_ms, 20);
  EXPECT_LT(q.max_ms, 20000);  // not a unit mix-up
}

TEST(EventLatencyTest, ClockStepsBackCountAsZeroAndHugeValuesAreKept) {
  EventLatency latency;
  latency.RecordMicros(EventLatency::kWriteDone, -5000);
  latency.RecordMicros(EventLatency::kWriteDone, int64_t{3600} * 1000000);  // past the last bucket
  const EventLatency::Quantiles q = latency.Of(EventLatency::kWriteDone);
  EXPECT_EQ(q.count, 2u);
  EXPECT_LE(q.p50_ms, 0.01);
  EXPECT_DOUBLE_EQ(q.max_ms, 3600 * 1000.0);
  EXPECT_NE(latency.Summary("traind: ").find("traind: step events, worker to write done"),
            std::string::npos);
  EXPECT_EQ(EventLatency().Summary(), "");
}

}  // namespace
}  // namespace traind
