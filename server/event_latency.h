// EventLatency: how long a worker's step events take to reach each point on their way to a
// watcher, measured from the worker's own timestamp (JobEvent.time; worker and daemon read the
// same machine's realtime clock). The figures are cumulative, so a stage costs the difference
// between its point and the one before:
//   received       the daemon decoded it from the worker's pipe   (pipe)
//   stored         its SQLite transaction committed                (store commit)
//   watcher read   a waiting watcher's pump read it from the store (hub wake-up + executor + read)
//   write done     gRPC finished that watcher's write              (reactor + transport)
// A watcher's backlog (events stored before it caught up) is not a delivery and is not counted.
// Lock-free counters in log-spaced buckets (10% wide): cheap enough for every event.
#ifndef TRAIND_SERVER_EVENT_LATENCY_H_
#define TRAIND_SERVER_EVENT_LATENCY_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "google/protobuf/timestamp.pb.h"

namespace traind {

class EventLatency {
 public:
  enum Point { kReceived, kStored, kWatcherRead, kWriteDone, kPoints };

  // Now minus `stamped`, counted at `point`. Negative (a clock step) counts as zero.
  void Record(Point point, const google::protobuf::Timestamp& stamped);
  void RecordMicros(Point point, int64_t micros);

  struct Quantiles {
    uint64_t count = 0;
    double p50_ms = 0, p99_ms = 0, max_ms = 0;  // p50/p99: their bucket's upper edge
  };
  Quantiles Of(Point point) const;
  // One line per point with events, each starting with `line_prefix` (for the daemon's log when
  // it stops); empty if none.
  std::string Summary(const std::string& line_prefix = "") const;

 private:
  static constexpr int kBuckets = 180;  // 10 us * 1.1^179: over 4 minutes
  static int BucketOf(int64_t micros);
  static double UpperEdgeMs(int bucket);

  std::array<std::array<std::atomic<uint64_t>, kBuckets>, kPoints> counts_{};
  std::array<std::atomic<int64_t>, kPoints> max_micros_{};
};

}  // namespace traind

#endif  // TRAIND_SERVER_EVENT_LATENCY_H_
