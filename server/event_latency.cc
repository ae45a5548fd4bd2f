#include "server/event_latency.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_format.h"

namespace traind {

namespace {

constexpr double kFirstEdgeMicros = 10;
constexpr double kGrowth = 1.1;
constexpr const char* kPointNames[] = {"received", "stored", "watcher read", "write done"};

}  // namespace

int EventLatency::BucketOf(int64_t micros) {
  if (micros <= kFirstEdgeMicros) return 0;
  const int bucket = static_cast<int>(
      std::ceil(std::log(static_cast<double>(micros) / kFirstEdgeMicros) / std::log(kGrowth)));
  return std::min(bucket, kBuckets - 1);
}

double EventLatency::UpperEdgeMs(int bucket) {
  return kFirstEdgeMicros * std::pow(kGrowth, bucket) / 1000.0;
}

void EventLatency::Record(Point point, const google::protobuf::Timestamp& stamped) {
  const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  RecordMicros(point, now - (stamped.seconds() * 1000000 + stamped.nanos() / 1000));
}

void EventLatency::RecordMicros(Point point, int64_t micros) {
  micros = std::max<int64_t>(micros, 0);
  counts_[point][BucketOf(micros)].fetch_add(1, std::memory_order_relaxed);
  std::atomic<int64_t>& max = max_micros_[point];
  int64_t seen = max.load(std::memory_order_relaxed);
  while (micros > seen && !max.compare_exchange_weak(seen, micros, std::memory_order_relaxed)) {
  }
}

EventLatency::Quantiles EventLatency::Of(Point point) const {
  std::array<uint64_t, kBuckets> counts;
  Quantiles q;
  for (int b = 0; b < kBuckets; ++b) {
    counts[b] = counts_[point][b].load(std::memory_order_relaxed);
    q.count += counts[b];
  }
  if (q.count == 0) return q;
  q.max_ms = max_micros_[point].load(std::memory_order_relaxed) / 1000.0;
  // The smallest bucket edge with at least that share of the events at or below it, never above
  // the largest seen.
  auto quantile = [&](double share) {
    const auto wanted = static_cast<uint64_t>(std::ceil(share * static_cast<double>(q.count)));
    uint64_t seen = 0;
    for (int b = 0; b < kBuckets; ++b) {
      seen += counts[b];
      if (seen >= wanted) return std::min(UpperEdgeMs(b), q.max_ms);
    }
    return q.max_ms;
  };
  q.p50_ms = quantile(0.50);
  q.p99_ms = quantile(0.99);
  return q;
}

std::string EventLatency::Summary(const std::string& line_prefix) const {
  std::string summary;
  for (int p = 0; p < kPoints; ++p) {
    const Quantiles q = Of(static_cast<Point>(p));
    if (q.count == 0) continue;
    absl::StrAppendFormat(
        &summary, "%sstep events, worker to %s: p50 %.2f ms, p99 %.2f ms, max %.1f ms (%d)\n",
        line_prefix, kPointNames[p], q.p50_ms, q.p99_ms, q.max_ms, q.count);
  }
  return summary;
}

}  // namespace traind
