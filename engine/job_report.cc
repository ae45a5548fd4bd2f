#include "engine/job_report.h"

#include <algorithm>
#include <chrono>

namespace traind {

void JobReport::Emit(trainer::v1::JobEvent event) {
  if (!speaks_) return;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  event.mutable_time()->set_seconds(nanos / 1000000000);
  event.mutable_time()->set_nanos(static_cast<int32_t>(nanos % 1000000000));
  emit_(std::move(event));
}

void JobReport::Log(const std::string& text) {
  trainer::v1::JobEvent event;
  event.mutable_log()->set_text(text);
  Emit(std::move(event));
}

void JobReport::Bench(const trainer::v1::BenchResult& result) {
  trainer::v1::JobEvent event;
  *event.mutable_bench() = result;
  Emit(std::move(event));
}

void JobReport::TrackPeaks(const MemoryReading& memory) {
  peak_current_ =
      std::max({peak_current_, memory.current_allocated, memory.peak_current_allocated});
  peak_driver_ = std::max({peak_driver_, memory.driver_allocated, memory.peak_driver_allocated});
}

}  // namespace traind
