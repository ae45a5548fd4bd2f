#include "engine/checkpoint.h"

#include <unistd.h>

#include "common/durable_file.h"

namespace traind {

namespace {

void WriteProgress(const Progress& progress, torch::serialize::OutputArchive& archive) {
  archive.write("epoch", torch::tensor(static_cast<int64_t>(progress.epoch)));
  archive.write("batch", torch::tensor(progress.batch));
  archive.write("loss_sum", torch::tensor(progress.loss_sum, torch::kFloat64));
  archive.write("epoch_seconds", torch::tensor(progress.epoch_seconds, torch::kFloat64));
  archive.write("global_step", torch::tensor(progress.global_step));
  archive.write("best_validation", torch::tensor(progress.best_validation, torch::kFloat64));
  archive.write("best_epoch", torch::tensor(static_cast<int64_t>(progress.best_epoch)));
  archive.write("train_seconds", torch::tensor(progress.train_seconds, torch::kFloat64));
  archive.write("stopped_epoch", torch::tensor(static_cast<int64_t>(progress.stopped_epoch)));
  archive.write("stopped_reason", c10::IValue(progress.stopped_reason));
}

// A tensor the archive has under `key`, if any. Each read gets a tensor of its own: try_read into
// a defined tensor would set_() it to the stored one in place (whatever its dtype).
std::optional<torch::Tensor> TryRead(torch::serialize::InputArchive& archive, const char* key) {
  torch::Tensor value;
  if (!archive.try_read(key, value)) return std::nullopt;
  return value;
}

torch::Tensor Read(torch::serialize::InputArchive& archive, const char* key) {
  torch::Tensor value;
  archive.read(key, value);
  return value;
}

Progress ReadProgress(torch::serialize::InputArchive& archive) {
  Progress progress;
  const int64_t epoch = Read(archive, "epoch").item<int64_t>();
  progress.best_validation = Read(archive, "best_validation").item<double>();
  progress.best_epoch = static_cast<int>(Read(archive, "best_epoch").item<int64_t>());
  const std::optional<torch::Tensor> batch = TryRead(archive, "batch");
  if (!batch.has_value()) {
    progress.epoch = static_cast<int>(epoch) + 1;  // the first format: epochs done
    return progress;
  }
  progress.epoch = static_cast<int>(epoch);
  progress.batch = batch->item<int64_t>();
  if (auto value = TryRead(archive, "loss_sum")) progress.loss_sum = value->item<double>();
  if (auto value = TryRead(archive, "epoch_seconds"))
    progress.epoch_seconds = value->item<double>();
  if (auto value = TryRead(archive, "global_step")) progress.global_step = value->item<int64_t>();
  if (auto value = TryRead(archive, "train_seconds"))
    progress.train_seconds = value->item<double>();
  if (auto value = TryRead(archive, "stopped_epoch")) {
    progress.stopped_epoch = static_cast<int>(value->item<int64_t>());
    c10::IValue reason;
    if (archive.try_read("stopped_reason", reason) && reason.isString()) {
      progress.stopped_reason = reason.toStringRef();
    }
  }
  return progress;
}

}  // namespace

absl::Status WriteCheckpoint(const std::string& path, const TrainingState& state,
                             const Progress& progress) {
  auto write = [&](const std::string& temp) {
    torch::serialize::OutputArchive archive;
    state.model.save(archive);
    torch::serialize::OutputArchive optimizer_archive;
    state.optimizer.save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
    WriteProgress(progress, archive);
    // Dropout and initialisation draw from the default generators, augmentation from the step's.
    archive.write("rng_cpu", at::detail::getDefaultCPUGenerator().get_state());
    if (!state.device.is_cpu()) {
      archive.write("rng_device", at::globalContext().defaultGenerator(state.device).get_state());
    }
    archive.write("rng_augment", state.augment_rng.get_state());
    state.scaler.Save(archive);
    archive.save_to(temp);
    return absl::OkStatus();
  };
  return WriteDurably(path, write, kCheckpointInJobDirectory);
}

absl::StatusOr<std::optional<Progress>> ReadCheckpoint(const std::string& path,
                                                       const TrainingState& state) {
  if (access(path.c_str(), F_OK) != 0) return std::nullopt;
  torch::serialize::InputArchive archive;
  archive.load_from(path, state.device);
  state.model.load(archive);
  torch::serialize::InputArchive optimizer_archive;
  archive.read("optimizer", optimizer_archive);
  state.optimizer.load(optimizer_archive);
  const Progress progress = ReadProgress(archive);
  // Generator states are CPU byte tensors whatever device the archive was mapped to.
  if (auto rng = TryRead(archive, "rng_cpu")) {
    at::Generator cpu = at::detail::getDefaultCPUGenerator();  // a handle: same generator
    cpu.set_state(rng->cpu());
  }
  if (!state.device.is_cpu()) {
    if (auto rng = TryRead(archive, "rng_device")) {
      at::Generator generator = at::globalContext().defaultGenerator(state.device);
      generator.set_state(rng->cpu());
    }
  }
  if (auto rng = TryRead(archive, "rng_augment")) state.augment_rng.set_state(rng->cpu());
  state.scaler.Load(archive);
  return progress;
}

}  // namespace traind
