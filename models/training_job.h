// Runs one training job to the end: loads the data, builds the model and optimizer, trains,
// evaluates, and reports everything as JobEvents through `emit` (called on the calling thread).
// The one wall for LibTorch's exceptions: nothing thrown escapes; errors come back as Status
// (out of memory -> RESOURCE_EXHAUSTED naming the device and batch size).
#ifndef TRAINING_MODELS_TRAINING_JOB_H_
#define TRAINING_MODELS_TRAINING_JOB_H_

#include <atomic>
#include <functional>

#include "absl/status/status.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

using EventSink = std::function<void(trainer::v1::JobEvent)>;

// `spec` must be validated with defaults applied and data_dir resolved. Returns CANCELLED soon
// after `stop` becomes true (checked between batches).
absl::Status RunTrainingJob(const trainer::v1::JobSpec& spec, const EventSink& emit,
                            const std::atomic<bool>& stop);

}  // namespace traind

#endif  // TRAINING_MODELS_TRAINING_JOB_H_
