// Runs one job to the end — training, or a benchmark — and reports everything as JobEvents
// through `emit` (called on the calling thread). The one wall for LibTorch's exceptions: nothing
// thrown escapes; errors come back as Status (out of memory -> RESOURCE_EXHAUSTED naming the
// device and batch size).
#ifndef TRAIND_ENGINE_TRAINING_JOB_H_
#define TRAIND_ENGINE_TRAINING_JOB_H_

#include <atomic>
#include <functional>

#include "absl/status/status.h"
#include "trainer/v1/trainer.pb.h"
#include "trainer/v1/worker.pb.h"

namespace traind {

using EventSink = std::function<void(trainer::v1::JobEvent)>;

// `request.spec` must be validated with defaults applied and data_dir resolved. Returns CANCELLED
// soon after `stop` becomes true (checked between batches). When `suspend` is set too, a training
// job first checkpoints where it stands (at the next optimizer step), so the next run of the job
// resumes from there: that is how traind stops jobs when it shuts down.
// Checkpoints (<job_dir>/checkpoint.pt: model, optimizer, RNG states, epoch and batch) are written
// every spec.checkpoint_every epochs and every request.checkpoint_interval_seconds; a job whose
// directory holds one resumes from it.
absl::Status RunTrainingJob(const trainer::v1::WorkerRequest& request, const EventSink& emit,
                            const std::atomic<bool>& stop,
                            const std::atomic<bool>* suspend = nullptr);

}  // namespace traind

#endif  // TRAIND_ENGINE_TRAINING_JOB_H_
