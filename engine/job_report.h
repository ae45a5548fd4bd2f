// JobReport: how a running job speaks: its JobEvents, stamped with the time, through the worker's
// sink, and the peak device memory its reports carry. In a data-parallel job rank 0 speaks for
// all; the other ranks report only their errors (worker/main.cc writes those itself).
// Thread-compatible; used from the job's thread.
#ifndef TRAIND_ENGINE_JOB_REPORT_H_
#define TRAIND_ENGINE_JOB_REPORT_H_

#include <cstdint>
#include <string>

#include "engine/device.h"
#include "engine/training_job.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class JobReport {
 public:
  explicit JobReport(const EventSink& emit) : emit_(emit) {}

  // Rank 0 of several, or a job's only process (the default).
  void set_speaks(bool speaks) { speaks_ = speaks; }
  void Emit(trainer::v1::JobEvent event);
  void Log(const std::string& text);
  void Bench(const trainer::v1::BenchResult& result);

  // Raises the peaks to `memory`'s readings (and their own peaks).
  void TrackPeaks(const MemoryReading& memory);
  int64_t peak_current() const { return peak_current_; }
  int64_t peak_driver() const { return peak_driver_; }

 private:
  const EventSink& emit_;
  bool speaks_ = true;
  int64_t peak_current_ = 0;
  int64_t peak_driver_ = 0;
};

}  // namespace traind

#endif  // TRAIND_ENGINE_JOB_REPORT_H_
