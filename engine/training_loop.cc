#include "engine/training_loop.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "engine/artifacts.h"
#include "engine/device.h"
#include "engine/device_activity.h"
#include "engine/elapsed.h"
#include "engine/fault_injection.h"

namespace traind {

namespace {

using trainer::v1::JobEvent;

// Data parallel: how often the ranks agree on stopping and checkpointing.
constexpr int64_t kCoordinateEvery = 8;
// The payload that marks PausedAtRung's status (a code alone could be any ABORTED).
constexpr char kPausedPayload[] = "traind.dev/paused-at-rung";

}  // namespace

absl::Status PausedAtRung(int epoch) {
  absl::Status status =
      absl::AbortedError(absl::StrCat("paused after epoch ", epoch, " (its search's rung)"));
  status.SetPayload(kPausedPayload, absl::Cord(absl::StrCat(epoch)));
  return status;
}

bool IsPausedAtRung(const absl::Status& status) {
  return status.GetPayload(kPausedPayload).has_value();
}

absl::StatusOr<int64_t> BatchesPerEpoch(int64_t images, int64_t batch_size, int world) {
  const int64_t batches = images / (batch_size * world);
  if (batches > 0) return batches;
  return absl::InvalidArgumentError(absl::StrCat(
      "batch_size: ", batch_size, world > 1 ? absl::StrCat(" x ", world, " ranks") : "",
      " is larger than the ", images, " training images"));
}

TrainingLoop::TrainingLoop(LoopParts parts, Progress resumed_from)
    : parts_(std::move(parts)),
      spec_(parts_.spec),
      world_(parts_.ranks != nullptr ? parts_.ranks->world_size() : 1),
      rank_(parts_.ranks != nullptr ? parts_.ranks->rank() : 0),
      batches_(BatchesPerEpoch(parts_.data.train.size(), parts_.batch_size, world_).value_or(0)),
      checkpoints_(!parts_.job_dir.empty()),
      resumed_(resumed_from.global_step > 0),
      schedule_(parts_.spec, batches_),
      resumed_from_(resumed_from),
      progress_(std::move(resumed_from)),
      learning_rate_(parts_.spec.learning_rate()),
      artifacts_(parts_.job_dir) {
  if (progress_.stopped_epoch > 0) {
    stopped_.emplace();
    stopped_->set_epoch(progress_.stopped_epoch);
    stopped_->set_reason(progress_.stopped_reason);
    stopped_->set_train_seconds(progress_.train_seconds);
  }
}

absl::Status TrainingLoop::Run() {
  const absl::Status status = TrainAndTest();
  // A best.pt still being written when training ended early (cancelled, failed) is reported too.
  const absl::Status reported = ReportArtifacts(/*wait=*/true);
  if (!status.ok() && !reported.ok()) {
    parts_.report.Log(absl::StrCat("Also: ", reported.message()));  // the job fails with `status`
  }
  return status.ok() ? reported : status;
}

absl::Status TrainingLoop::TrainAndTest() {
  train_start_ = ClockMinus(progress_.train_seconds);
  last_checkpoint_ = Clock::now();
  // Its pause's checkpoint, and traind stopped before it heard of the pause: paused still.
  if (parts_.pause_after_epoch > 0 && resumed_from_.epoch == parts_.pause_after_epoch + 1 &&
      resumed_from_.batch == 0 && parts_.pause_after_epoch < spec_.epochs()) {
    parts_.report.Log(absl::StrCat("Paused after epoch ", parts_.pause_after_epoch, " of ",
                                   spec_.epochs(), " (its checkpoint was already there)"));
    return PausedAtRung(parts_.pause_after_epoch);
  }
  for (int epoch = resumed_from_.epoch; epoch <= spec_.epochs(); ++epoch) {
    RETURN_IF_ERROR(TrainEpoch(epoch));
    if (stopped_) {
      parts_.report.Log(absl::StrCat("Stopped after epoch ", epoch, " of ", spec_.epochs(), ": ",
                                     stopped_->reason()));
      break;
    }
    if (epoch == parts_.pause_after_epoch && epoch < spec_.epochs()) return Pause(epoch);
  }
  return Test();
}

absl::Status TrainingLoop::Pause(int epoch) {
  if (!checkpoints_) {
    return absl::FailedPreconditionError("cannot pause a job with no directory for its checkpoint");
  }
  // As CheckpointAfterEpoch writes one (a search's trials checkpoint every epoch: it has, unless
  // the spec said otherwise): the next run starts at the next epoch's first batch.
  if (saved_after_epoch_ != epoch) {
    progress_.epoch = epoch + 1;
    progress_.train_seconds = TrainSeconds();
    progress_.batch = 0;
    progress_.loss_sum = 0;
    progress_.epoch_seconds = 0;
    RETURN_IF_ERROR(SaveCheckpoint(""));
  }
  parts_.report.Log(absl::StrCat("Paused after epoch ", epoch, " of ", spec_.epochs(),
                                 ": its search's rung; it resumes here if the search promotes it"));
  return PausedAtRung(epoch);
}

absl::Status TrainingLoop::TrainEpoch(int epoch) {
  *parts_.phase = "training";
  const bool continuing = epoch == resumed_from_.epoch && resumed_from_.batch > 0;
  const int64_t first_batch = continuing ? resumed_from_.batch : 0;
  // One generator per epoch, derived from the seed, so a resumed job shuffles exactly as an
  // uninterrupted one would.
  torch::Generator shuffle_rng = at::detail::createCPUGenerator(spec_.seed() * 1000003 + epoch);
  // A resumed epoch counts the training time it had before the interruption.
  const auto epoch_start = ClockMinus(continuing ? resumed_from_.epoch_seconds : 0.0);
  auto window_start = Clock::now();
  int64_t window_batches = 0;
  const torch::Tensor order =
      torch::randperm(parts_.data.train.size(), shuffle_rng).to(parts_.data.train.inputs.device());
  // Summed on the device: reading it every step would synchronise every step.
  torch::Tensor loss_sum = torch::full({}, continuing ? resumed_from_.loss_sum : 0.0,
                                       torch::TensorOptions().device(parts_.device));
  const int64_t accumulate = std::max(1, spec_.accumulate());
  for (int64_t batch = first_batch; batch < batches_; ++batch) {
    const Requests asked = Poll(batch);
    // Checkpoints fall between optimizer steps, so no accumulated gradient is lost.
    if (checkpoints_ && batch % accumulate == 0 && batch > first_batch &&
        (asked.suspend || asked.checkpoint_due)) {
      RETURN_IF_ERROR(
          CheckpointMidEpoch(epoch, batch, loss_sum, SecondsSince(epoch_start), asked.suspend));
      if (asked.suspend) return absl::CancelledError("stopped after a checkpoint; it will resume");
    }
    if (asked.stop && !(asked.suspend && checkpoints_)) return absl::CancelledError("cancelled");
    const torch::Tensor loss = TrainBatch(order, batch);
    RETURN_IF_ERROR(StopProfilerWhenDone());
    loss_sum += loss.to(torch::kFloat32);
    ++window_batches;
    if (batch % spec_.log_every() == 0) {
      RETURN_IF_ERROR(ReportStep(epoch, batch, loss, SecondsSince(window_start), window_batches));
      window_start = Clock::now();
      window_batches = 0;
    }
  }
  parts_.runner.Flush();
  Synchronize(parts_.device);
  return FinishEpoch(epoch, SecondsSince(epoch_start), loss_sum);
}

TrainingLoop::Requests TrainingLoop::Poll(int64_t batch) {
  Requests asked;
  asked.suspend = parts_.suspend != nullptr && parts_.suspend->load(std::memory_order_relaxed);
  asked.stop = parts_.stop.load(std::memory_order_relaxed);
  asked.checkpoint_due = parts_.checkpoint_interval > 0 &&
                         SecondsSince(last_checkpoint_) >= parts_.checkpoint_interval;
  if (parts_.ranks == nullptr) return asked;
  // Ranks decide together (every kCoordinateEvery steps), or one would stop while the others
  // wait for it in the next all-reduce.
  if (batch % kCoordinateEvery != 0) return Requests{};
  const std::vector<bool> any = AnyRank({asked.suspend, asked.stop, asked.checkpoint_due});
  return Requests{any[0], any[1], any[2]};
}

torch::Tensor TrainingLoop::TrainBatch(const torch::Tensor& order, int64_t batch) {
  const int64_t first = (batch * world_ + rank_) * parts_.batch_size;
  const torch::Tensor index = order.slice(0, first, first + parts_.batch_size);
  const torch::Tensor images = parts_.data.train.inputs.index_select(0, index).to(parts_.device);
  const torch::Tensor labels = parts_.data.train.labels.index_select(0, index).to(parts_.device);
  if (spec_.has_debug()) BeforeStep(spec_.debug(), progress_.global_step, resumed_, parts_.device);
  if (spec_.profile_steps() > 0 && progress_.global_step == 1) profiler_.Start();
  if (schedule_.varies()) {
    learning_rate_ = schedule_.At(progress_.global_step);
    parts_.runner.SetLearningRate(learning_rate_);
  }
  torch::Tensor loss = parts_.runner.Run(images, labels);
  ++progress_.global_step;
  return loss;
}

absl::Status TrainingLoop::StopProfilerWhenDone() {
  if (!profiler_.running() || progress_.global_step != 1 + spec_.profile_steps()) {
    return absl::OkStatus();
  }
  Synchronize(parts_.device);
  ASSIGN_OR_RETURN(trainer::v1::ProfileResult profile,
                   profiler_.Stop(checkpoints_ ? parts_.job_dir + "/trace.json" : "",
                                  static_cast<int>(spec_.profile_steps())));
  JobEvent event;
  *event.mutable_profile() = std::move(profile);
  parts_.report.Emit(std::move(event));
  return absl::OkStatus();
}

absl::Status TrainingLoop::ReportStep(int epoch, int64_t batch, const torch::Tensor& loss,
                                      double window_seconds, int64_t window_batches) {
  // item() synchronises the device, so the window's timing is honest. Data parallel: the global
  // batch's loss, the mean of the ranks'.
  const double loss_value = MeanOverRanks(loss.item<double>());
  RETURN_IF_ERROR(CheckLossIsFinite(loss_value, epoch, batch));
  const MemoryReading memory = ReadMemory(parts_.device);
  parts_.report.TrackPeaks(memory);
  JobEvent event;
  auto* metrics = event.mutable_step();
  metrics->set_epoch(epoch);
  metrics->set_epochs(spec_.epochs());
  metrics->set_batch(static_cast<int32_t>(batch));
  metrics->set_batches_per_epoch(static_cast<int32_t>(batches_));
  metrics->set_loss(loss_value);
  metrics->set_learning_rate(learning_rate_);
  metrics->set_samples_per_second(window_batches * parts_.batch_size * world_ /
                                  std::max(window_seconds, 1e-9));
  metrics->set_step_seconds(window_seconds / window_batches);
  metrics->set_current_allocated_bytes(memory.current_allocated);
  metrics->set_driver_allocated_bytes(memory.driver_allocated);
  metrics->set_peak_current_allocated_bytes(parts_.report.peak_current());
  metrics->set_peak_driver_allocated_bytes(parts_.report.peak_driver());
  AddRankMemory(memory, metrics);
  AddDeviceActivity(parts_.device, metrics);
  parts_.report.Emit(std::move(event));
  return absl::OkStatus();
}

absl::Status TrainingLoop::FinishEpoch(int epoch, double epoch_seconds,
                                       const torch::Tensor& loss_sum) {
  // Batch norm's running statistics follow each rank's own slice: rank 0's are the model's (as
  // with DDP's broadcast_buffers), so every rank evaluates, and ends with, the same weights.
  if (parts_.ranks != nullptr) parts_.ranks->BroadcastBuffersFromRankZero(*parts_.model.ptr());
  JobEvent event;
  auto* summary = event.mutable_epoch_summary();
  summary->set_epoch(epoch);
  summary->set_epochs(spec_.epochs());
  summary->set_epoch_seconds_no_eval(epoch_seconds);
  summary->set_train_loss(MeanOverRanks(loss_sum.item<double>()) / batches_);
  summary->set_learning_rate(learning_rate_);
  RETURN_IF_ERROR(CheckLossIsFinite(summary->train_loss(), epoch, batches_ - 1));
  // A search's rung is judged on its epoch's evaluation, whatever eval_every says.
  if (epoch % spec_.eval_every() == 0 || epoch == spec_.epochs() ||
      epoch == parts_.pause_after_epoch) {
    RETURN_IF_ERROR(Evaluate(epoch, summary));
  }
  summary->set_best_validation_accuracy(
      parts_.loss == LossKind::kMse ? 0.0 : std::max(progress_.best_validation, 0.0));
  summary->set_best_epoch(progress_.best_epoch);
  summary->set_elapsed_seconds(TrainSeconds());
  ApplyStopRules(epoch, *summary);
  parts_.report.Emit(std::move(event));
  RETURN_IF_ERROR(ReportArtifacts(/*wait=*/false));
  return CheckpointAfterEpoch(epoch);
}

absl::Status TrainingLoop::Evaluate(int epoch, trainer::v1::EpochSummary* summary) {
  const auto eval_start = Clock::now();
  *parts_.phase = "evaluating";
  const Evaluation train_eval =
      traind::Evaluate(parts_.model, parts_.data.train, parts_.device, spec_.amp(),
                       parts_.batch_size, parts_.loss, parts_.data.num_classes,
                       /*with_confusion=*/false, parts_.shards);
  const Evaluation validation =
      traind::Evaluate(parts_.model, parts_.data.validation, parts_.device, spec_.amp(),
                       parts_.batch_size, parts_.loss, parts_.data.num_classes,
                       /*with_confusion=*/false, parts_.shards);
  summary->set_evaluated(true);
  summary->set_train_accuracy(train_eval.accuracy);
  summary->set_validation_accuracy(validation.accuracy);
  summary->set_validation_loss(validation.loss);
  summary->set_eval_seconds(SecondsSince(eval_start));
  if (spec_.stop_at_accuracy() > 0 && validation.accuracy >= spec_.stop_at_accuracy()) {
    stopped_.emplace();
    stopped_->set_reason(absl::StrFormat("reached validation accuracy %.4f >= %g",
                                         validation.accuracy, spec_.stop_at_accuracy()));
  }
  const double score = parts_.loss == LossKind::kMse ? -validation.loss : validation.accuracy;
  if (score <= progress_.best_validation) return absl::OkStatus();
  progress_.best_validation = score;
  progress_.best_epoch = epoch;
  if (checkpoints_ && IsRankZero()) return KeepArtifact("best", epoch, &validation);
  return absl::OkStatus();
}

void TrainingLoop::ApplyStopRules(int epoch, const trainer::v1::EpochSummary& summary) {
  // Evaluations since the best one, from the stored best epoch (so a resumed job counts on).
  const int since_best = (epoch - progress_.best_epoch) / std::max(1, spec_.eval_every());
  if (!stopped_ && spec_.early_stop_patience() > 0 && summary.evaluated() &&
      since_best >= spec_.early_stop_patience()) {
    stopped_.emplace();
    stopped_->set_reason(
        absl::StrFormat("no better validation score in %d evaluations (best: epoch %d)", since_best,
                        progress_.best_epoch));
  }
  // Every rank evaluates the same weights on the same data, but a stop must be unanimous.
  if (parts_.ranks != nullptr && AnyRank({stopped_.has_value()})[0] && !stopped_) {
    stopped_.emplace();
    stopped_->set_reason("another rank's evaluation stopped training");
  }
  if (stopped_ && epoch == spec_.epochs()) stopped_.reset();  // it ran every epoch
  if (stopped_) {
    stopped_->set_epoch(epoch);
    stopped_->set_train_seconds(TrainSeconds());
  }
}

absl::Status TrainingLoop::CheckpointMidEpoch(int epoch, int64_t batch,
                                              const torch::Tensor& loss_sum, double epoch_seconds,
                                              bool suspending) {
  Synchronize(parts_.device);
  progress_.epoch = epoch;
  progress_.batch = batch;
  progress_.loss_sum = loss_sum.item<double>();
  progress_.epoch_seconds = epoch_seconds;
  progress_.train_seconds = TrainSeconds();
  return SaveCheckpoint(suspending ? "before stopping" : "on schedule");
}

absl::Status TrainingLoop::CheckpointAfterEpoch(int epoch) {
  const bool due = stopped_ ||
                   (spec_.checkpoint_every() > 0 && epoch % spec_.checkpoint_every() == 0) ||
                   (parts_.checkpoint_interval > 0 &&
                    SecondsSince(last_checkpoint_) >= parts_.checkpoint_interval);
  if (!checkpoints_ || !due) return absl::OkStatus();
  // A stopped job's checkpoint says so: resumed, it evaluates instead of training on.
  progress_.epoch = stopped_ ? spec_.epochs() + 1 : epoch + 1;
  progress_.train_seconds = TrainSeconds();
  progress_.stopped_epoch = stopped_ ? stopped_->epoch() : 0;
  progress_.stopped_reason = stopped_ ? stopped_->reason() : "";
  progress_.batch = 0;
  progress_.loss_sum = 0;
  progress_.epoch_seconds = 0;
  RETURN_IF_ERROR(SaveCheckpoint(""));
  saved_after_epoch_ = stopped_ ? 0 : epoch;
  return absl::OkStatus();
}

absl::Status TrainingLoop::SaveCheckpoint(const std::string& why) {
  // The checkpoint's best epoch and best.pt agree, even after a crash right after it.
  RETURN_IF_ERROR(ReportArtifacts(/*wait=*/true));
  RETURN_IF_ERROR(parts_.runner.SyncOptimizer());
  if (IsRankZero()) {  // the ranks' weights are the same: one writes them
    const TrainingState state{*parts_.model.ptr(), parts_.optimizer, parts_.step.rng(),
                              parts_.step.scaler(), parts_.device};
    RETURN_IF_ERROR(WriteCheckpoint(CheckpointPath(parts_.job_dir), state, progress_));
  }
  last_checkpoint_ = Clock::now();
  if (progress_.batch == 0) {
    parts_.report.Log(absl::StrCat("Checkpoint after epoch ", progress_.epoch - 1, ": ",
                                   kCheckpointInJobDirectory));
  } else {
    parts_.report.Log(absl::StrCat(
        "Checkpoint at epoch ", progress_.epoch, ", batch ", progress_.batch, "/", batches_,
        why.empty() ? "" : " (" + why + ")", ": ", kCheckpointInJobDirectory));
  }
  return absl::OkStatus();
}

absl::Status TrainingLoop::Test() {
  const double training_seconds = TrainSeconds();
  *parts_.phase = "evaluating";
  const Evaluation test =
      traind::Evaluate(parts_.model, parts_.data.test, parts_.device, spec_.amp(),
                       parts_.batch_size, parts_.loss, parts_.data.num_classes,
                       /*with_confusion=*/false, parts_.shards);
  parts_.report.TrackPeaks(ReadMemory(parts_.device));
  if (parts_.ranks != nullptr) RETURN_IF_ERROR(CheckRanksAgree());
  if (checkpoints_ && IsRankZero()) {
    RETURN_IF_ERROR(KeepArtifact("final", stopped_ ? stopped_->epoch() : spec_.epochs(), nullptr));
  }
  RETURN_IF_ERROR(ReportArtifacts(/*wait=*/true));  // before the result: the job ends with it
  JobEvent event;
  auto* result = event.mutable_final_result();
  result->set_test_accuracy(test.accuracy);
  result->set_test_loss(test.loss);
  result->set_total_training_seconds(training_seconds);
  result->set_total_seconds(SecondsSince(parts_.started));
  result->set_peak_current_allocated_bytes(parts_.report.peak_current());
  result->set_peak_driver_allocated_bytes(parts_.report.peak_driver());
  result->set_batch_size(static_cast<int32_t>(parts_.batch_size));
  if (stopped_) *result->mutable_stopped() = *stopped_;
  parts_.report.Emit(std::move(event));
  return absl::OkStatus();
}

absl::Status TrainingLoop::KeepArtifact(const std::string& name, int epoch,
                                        const Evaluation* validation) {
  return artifacts_.Keep(
      parts_.model, name, epoch,
      validation != nullptr ? std::optional<double>(validation->accuracy) : std::nullopt);
}

absl::Status TrainingLoop::ReportArtifacts(bool wait) {
  ASSIGN_OR_RETURN(std::vector<trainer::v1::Artifact> written,
                   wait ? artifacts_.Drain() : artifacts_.Finished());
  for (trainer::v1::Artifact& artifact : written) {
    JobEvent event;
    *event.mutable_artifact() = std::move(artifact);
    parts_.report.Emit(std::move(event));
  }
  return absl::OkStatus();
}

absl::Status TrainingLoop::CheckLossIsFinite(double loss, int epoch, int64_t batch) const {
  if (std::isfinite(loss) || spec_.allow_nonfinite_loss()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "loss became %s at epoch %d, batch %d (learning rate %g): training diverged. Lower the "
      "learning rate, or set allow_nonfinite_loss (--allow-nonfinite-loss) to train on",
      std::isnan(loss) ? "NaN" : "infinite", epoch, batch, learning_rate_));
}

double TrainingLoop::TrainSeconds() const { return SecondsSince(train_start_); }

std::vector<bool> TrainingLoop::AnyRank(std::vector<bool> flags) {
  return parts_.ranks != nullptr ? parts_.ranks->Any(flags) : flags;
}

double TrainingLoop::MeanOverRanks(double value) {
  return parts_.ranks != nullptr ? parts_.ranks->Mean(value) : value;
}

void TrainingLoop::AddRankMemory(const MemoryReading& mine, trainer::v1::StepMetrics* metrics) {
  if (parts_.ranks == nullptr) return;
  const torch::Device& device = parts_.device;
  const int64_t packed[3] = {mine.current_allocated, mine.driver_allocated,
                             device.has_index() ? device.index() : -1};
  const std::vector<std::string> all =
      parts_.ranks->AllGather(std::string(reinterpret_cast<const char*>(packed), sizeof(packed)));
  for (size_t r = 0; r < all.size(); ++r) {
    int64_t theirs[3] = {0, 0, -1};
    std::memcpy(theirs, all[r].data(), std::min(all[r].size(), sizeof(theirs)));
    trainer::v1::RankMemory* rank = metrics->add_ranks();
    rank->set_rank(static_cast<int32_t>(r));
    rank->set_device(theirs[2] >= 0
                         ? absl::StrCat(c10::DeviceTypeName(device.type(), true), ":", theirs[2])
                         : c10::DeviceTypeName(device.type(), true));
    rank->set_current_allocated_bytes(theirs[0]);
    rank->set_driver_allocated_bytes(theirs[1]);
  }
}

absl::Status TrainingLoop::CheckRanksAgree() {
  Sha256 sha;
  auto add = [&sha](const torch::Tensor& tensor) {
    const torch::Tensor bytes = tensor.detach().to(torch::kCPU).contiguous();
    sha.Update(absl::string_view(static_cast<const char*>(bytes.data_ptr()), bytes.nbytes()));
  };
  for (const auto& item : parts_.model.ptr()->named_parameters()) add(item.value());
  for (const auto& item : parts_.model.ptr()->named_buffers()) add(item.value());
  const std::vector<std::string> digests = parts_.ranks->AllGather(sha.HexDigest());
  std::string listed;
  for (size_t r = 0; r < digests.size(); ++r) {
    absl::StrAppend(&listed, r == 0 ? "" : ", ", r, " ", digests[r].substr(0, 16));
  }
  for (const std::string& digest : digests) {
    if (digest != digests[0]) {
      return absl::InternalError(
          absl::StrCat("data parallel: the ranks' weights differ (sha256 by rank: ", listed, ")"));
    }
  }
  parts_.report.Log(absl::StrCat(
      "Data parallel: every rank ends with the same weights (sha256 by rank: ", listed, ")"));
  return absl::OkStatus();
}

}  // namespace traind
