// TrainingLoop: a job's epochs, from where its checkpoint left off to the final test, as
// pytorch/examples' mnist.cpp reads: for each epoch, train it, then finish it (evaluate, keep the
// best weights, decide whether to stop, checkpoint); then test. Everything it trains with is set
// up before (engine/training_job.cc): the model, its optimizer, the step (eager or a CUDA graph),
// the data-parallel group, the resumed Progress. Thread-compatible; runs on the job's thread.
#ifndef TRAIND_ENGINE_TRAINING_LOOP_H_
#define TRAIND_ENGINE_TRAINING_LOOP_H_

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "engine/artifact_writer.h"
#include "engine/checkpoint.h"
#include "engine/data_parallel.h"
#include "engine/evaluate.h"
#include "engine/job_report.h"
#include "engine/loss.h"
#include "engine/lr_schedule.h"
#include "engine/shard_threads.h"
#include "engine/step_profiler.h"
#include "engine/step_runner.h"
#include "engine/train_step.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// What the loop trains with. Not owned: everything outlives the loop.
struct LoopParts {
  const trainer::v1::JobSpec& spec;  // the fast paths resolved
  torch::Device device;
  Dataset& data;
  int64_t batch_size;  // per rank
  LossKind loss;
  torch::nn::AnyModule model;
  torch::optim::Optimizer& optimizer;
  TrainStep& step;             // its generator and gradient scaler are checkpointed
  StepRunner& runner;          // `step`, or a CUDA graph of it
  ShardThreads* shards;        // the step's shard threads, which evaluation uses too; nullptr: none
  DataParallel* ranks;         // nullptr: the job's only process
  std::string job_dir;         // checkpoints, artifacts, the profiler's trace; "": none of those
  double checkpoint_interval;  // seconds between mid-epoch checkpoints; 0: none
  const std::atomic<bool>& stop;
  const std::atomic<bool>* suspend;  // set with stop: checkpoint first (nullptr: never)
  // A search's trial: after this epoch, checkpoint and pause (PausedAtRung); 0: train to the end.
  int pause_after_epoch;
  JobReport& report;
  const char** phase;  // what the job is doing, for an out-of-memory error caught outside
  std::chrono::steady_clock::time_point started;  // the job's start, for the result's total
};

// Steps in an epoch: a step takes a global batch of world * batch_size from the shuffled order
// (rank r trains on its r-th slice) and the last partial global batch is dropped.
// INVALID_ARGUMENT when not even one global batch fits in `images`.
absl::StatusOr<int64_t> BatchesPerEpoch(int64_t images, int64_t batch_size, int world);

// How a run that paused at its rung ends (the worker exits kWorkerPaused), and whether a status
// is that.
absl::Status PausedAtRung(int epoch);
bool IsPausedAtRung(const absl::Status& status);

class TrainingLoop {
 public:
  // `resumed_from` is the checkpoint's Progress (a fresh one for a new job). BatchesPerEpoch must
  // have accepted the data, batch size and ranks.
  TrainingLoop(LoopParts parts, Progress resumed_from);

  // Trains the remaining epochs, tests, keeps the final weights and reports the final result.
  // CANCELLED when stopped (after a checkpoint when suspended); PausedAtRung after
  // pause_after_epoch's epoch (its checkpoint written).
  absl::Status Run();

 private:
  using Clock = std::chrono::steady_clock;
  // What the job was asked before a batch; data parallel: what any rank was asked.
  struct Requests {
    bool suspend = false;
    bool stop = false;
    bool checkpoint_due = false;
  };

  absl::Status TrainEpoch(int epoch);
  // Evaluation, best weights, the stop rules, the epoch's checkpoint. Sets stopped_ to end here.
  absl::Status FinishEpoch(int epoch, double epoch_seconds, const torch::Tensor& loss_sum);
  absl::Status Test();

  Requests Poll(int64_t batch);
  absl::Status CheckpointMidEpoch(int epoch, int64_t batch, const torch::Tensor& loss_sum,
                                  double epoch_seconds, bool suspending);
  absl::Status CheckpointAfterEpoch(int epoch);
  absl::Status SaveCheckpoint(const std::string& why);
  torch::Tensor TrainBatch(const torch::Tensor& order, int64_t batch);
  absl::Status StopProfilerWhenDone();
  absl::Status ReportStep(int epoch, int64_t batch, const torch::Tensor& loss,
                          double window_seconds, int64_t window_batches);
  absl::Status Evaluate(int epoch, trainer::v1::EpochSummary* summary);
  void ApplyStopRules(int epoch, const trainer::v1::EpochSummary& summary);
  absl::Status TrainAndTest();
  // The end of a search trial's rung: a checkpoint at the epoch's end, then PausedAtRung.
  absl::Status Pause(int epoch);
  absl::Status KeepArtifact(const std::string& name, int epoch, const Evaluation* validation);
  // Emits an event for each artifact written since the last call; with `wait`, after waiting for
  // the one being written.
  absl::Status ReportArtifacts(bool wait);
  // A NaN or infinite loss ruins the weights for good: fail now, saying when, rather than train
  // on and report a "succeeded" job with NaN loss (unless the spec allows it).
  absl::Status CheckLossIsFinite(double loss, int epoch, int64_t batch) const;
  // Collectives, or the value itself for a job's only process.
  std::vector<bool> AnyRank(std::vector<bool> flags);
  double MeanOverRanks(double value);
  void AddRankMemory(const MemoryReading& mine, trainer::v1::StepMetrics* metrics);
  absl::Status CheckRanksAgree();
  bool IsRankZero() const { return parts_.ranks == nullptr || parts_.ranks->rank() == 0; }
  double TrainSeconds() const;

  LoopParts parts_;
  const trainer::v1::JobSpec& spec_;
  const int world_;
  const int rank_;
  const int64_t batches_;  // BatchesPerEpoch
  const bool checkpoints_;
  const bool resumed_;         // a crash injected for a test happens once
  const LrSchedule schedule_;  // a function of the global step: a resumed job stays on its curve
  const Progress resumed_from_;
  Progress progress_;
  double learning_rate_;
  std::optional<trainer::v1::Stopped> stopped_;
  ArtifactWriter artifacts_;  // best.pt and final.pt, written off the training thread
  StepProfiler profiler_;  // steps 1..N: step 0 pays one-time costs (allocations, kernel choices)
  Clock::time_point train_start_;  // moved back by the training time before a resume
  Clock::time_point last_checkpoint_;
  // The epoch whose end CheckpointAfterEpoch last saved (0: none): a pause right after it has
  // nothing more to write.
  int saved_after_epoch_ = 0;
};

}  // namespace traind

#endif  // TRAIND_ENGINE_TRAINING_LOOP_H_
