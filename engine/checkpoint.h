// A training job's checkpoint (<job_dir>/checkpoint.pt): the model, the optimizer, where training
// stands (Progress) and the random generators' states, so a resumed job continues exactly where
// an uninterrupted one would be. Written durably (common/durable_file.h). Every format traind has
// written reads back: the first recorded only epochs done; later ones added the batch within an
// epoch, the global step, the training time and why a job stopped early; a missing key takes
// Progress's default.
#ifndef TRAIND_ENGINE_CHECKPOINT_H_
#define TRAIND_ENGINE_CHECKPOINT_H_

#include <torch/torch.h>

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/mixed_precision.h"

namespace traind {

// The checkpoint in a job's directory, and how the job's log names it: without the daemon's paths
// (a remote owner reads the log and learns nothing of the daemon's file system from it).
inline std::string CheckpointPath(const std::string& job_dir) { return job_dir + "/checkpoint.pt"; }
inline constexpr char kCheckpointInJobDirectory[] = "checkpoint.pt in the job's directory";

// Where a training run stands; what a checkpoint records besides the model and optimizer.
struct Progress {
  int epoch = 1;             // the epoch to run next (or to continue)
  int64_t batch = 0;         // batches of `epoch` already done
  double loss_sum = 0;       // their summed loss
  double epoch_seconds = 0;  // training time they took
  int64_t global_step = 0;
  // The best validation result so far: accuracy (cross-entropy) or minus the loss (mse).
  double best_validation = -1e300;
  int best_epoch = 0;
  double train_seconds = 0;  // training time before this run (a resumed job counts on from it)
  // Set when stop_at_accuracy or early_stop_patience ended training: a resumed job goes straight
  // to its final evaluation and still says why it stopped.
  int stopped_epoch = 0;
  std::string stopped_reason;
};

// What a checkpoint saves and restores besides Progress. Not owned.
struct TrainingState {
  torch::nn::Module& model;
  torch::optim::Optimizer& optimizer;
  torch::Generator& augment_rng;  // the step's augmentation generator
  GradScaler& scaler;
  torch::Device device;  // the job's; its default generator is saved too when not the CPU
};

// Writes `state` and `progress` to `path`, whole or not at all.
absl::Status WriteCheckpoint(const std::string& path, const TrainingState& state,
                             const Progress& progress);

// Restores `state` from the checkpoint at `path` and returns its Progress; nullopt (and `state`
// untouched) when there is none. Tensors are mapped to state.device. LibTorch's errors (a torn or
// foreign file) are thrown as c10::Error.
absl::StatusOr<std::optional<Progress>> ReadCheckpoint(const std::string& path,
                                                       const TrainingState& state);

}  // namespace traind

#endif  // TRAIND_ENGINE_CHECKPOINT_H_
