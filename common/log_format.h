// The reference scripts' console lines (rasbt's M1 benchmarks), rebuilt from JobEvents, so
// `trainctl logs` reads like the output PyTorch users already compare by hand. Pure functions.
#ifndef TRAIND_COMMON_LOG_FORMAT_H_
#define TRAIND_COMMON_LOG_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/v1/trainer.pb.h"

namespace traind {

// "Epoch: 001/010 | Batch 0100/0421 | Loss: 0.2646"
std::string FormatStepLine(const trainer::v1::StepMetrics& step);

// "Time / epoch without evaluation: 0.18 min",
// "Epoch: 001/010 | Train: 97.32% | Validation: 97.77% | Best Validation (Ep. 001): 97.77%",
// "Time elapsed: 0.25 min"
std::vector<std::string> FormatEpochLines(const trainer::v1::EpochSummary& summary);

// "Total Training Time: 0.25 min", "Test accuracy 97.41%", "Total Time: 0.27 min"
std::vector<std::string> FormatFinalLines(const trainer::v1::FinalResult& result);

// All reference lines an event contributes (none for state changes and metrics-only events).
std::vector<std::string> FormatEventLines(const trainer::v1::JobEvent& event);

// "12.3 MiB", "1.50 GiB".
std::string FormatBytes(int64_t bytes);

// "42s", "3m05s", "1h02m".
std::string FormatDuration(double seconds);

// "QUEUED", "RUNNING", ...
std::string StateName(trainer::v1::Job::State state);

}  // namespace traind

#endif  // TRAIND_COMMON_LOG_FORMAT_H_
