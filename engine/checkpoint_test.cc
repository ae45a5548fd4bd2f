#include "engine/checkpoint.h"

#include <torch/torch.h>

#include "common/temp_dir_for_tests.h"
#include "engine/optimizer_factory.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

// A model, its Adam optimizer after one step (so it has moments to save), and the generators a
// checkpoint carries: everything TrainingState points at, owned together.
struct Trainee {
  explicit Trainee(uint64_t seed) : augment_rng(at::detail::createCPUGenerator(seed)) {
    torch::manual_seed(seed);
    model = torch::nn::Linear(4, 3);
    optimizer =
        std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(0.01));
  }
  void TakeAStep() {
    optimizer->zero_grad();
    model->forward(torch::randn({5, 4})).sum().backward();
    optimizer->step();
  }
  TrainingState State() {
    return TrainingState{*model, *optimizer, augment_rng, scaler, torch::Device(torch::kCPU)};
  }
  torch::nn::Linear model{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer;
  torch::Generator augment_rng;
  GradScaler scaler{torch::Device(torch::kCPU), /*enabled=*/false};
};

void ExpectSameTensors(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "tensor " << i;
}

// Each parameter's moments, in the parameters' order (the state map's own order is a hash's).
std::vector<torch::Tensor> AdamMoments(torch::optim::Adam& optimizer) {
  std::vector<torch::Tensor> moments;
  for (const torch::Tensor& parameter : optimizer.param_groups().at(0).params()) {
    const auto& state = optimizer.state().at(StateKey(optimizer.state(), parameter));
    const auto& adam = static_cast<const torch::optim::AdamParamState&>(*state);
    moments.push_back(adam.exp_avg());
    moments.push_back(adam.exp_avg_sq());
  }
  return moments;
}

Progress SomeProgress() {
  Progress progress;
  progress.epoch = 3;
  progress.batch = 17;
  progress.loss_sum = 4.25;
  progress.epoch_seconds = 1.5;
  progress.global_step = 251;
  progress.best_validation = 0.875;
  progress.best_epoch = 2;
  progress.train_seconds = 12.75;
  progress.stopped_epoch = 2;
  progress.stopped_reason = "reached validation accuracy 0.8750 >= 0.85";
  return progress;
}

// Written by one run, read by another: weights, Adam's moments, every Progress field and the
// generators' states come back; nothing is trained.
TEST(CheckpointTest, RoundTripRestoresEverything) {
  TempDirForTests temp;
  const std::string path = temp / "checkpoint.pt";
  Trainee before(1);
  before.TakeAStep();
  ASSERT_TRUE(WriteCheckpoint(path, before.State(), SomeProgress()).ok());
  const torch::Tensor cpu_draw = torch::rand({3});  // what the default generator draws next
  const torch::Tensor augment_draw = torch::rand({3}, before.augment_rng);

  Trainee after(2);
  absl::StatusOr<std::optional<Progress>> read = ReadCheckpoint(path, after.State());
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  const Progress& progress = **read;
  const Progress expected = SomeProgress();
  EXPECT_EQ(progress.epoch, expected.epoch);
  EXPECT_EQ(progress.batch, expected.batch);
  EXPECT_EQ(progress.loss_sum, expected.loss_sum);
  EXPECT_EQ(progress.epoch_seconds, expected.epoch_seconds);
  EXPECT_EQ(progress.global_step, expected.global_step);
  EXPECT_EQ(progress.best_validation, expected.best_validation);
  EXPECT_EQ(progress.best_epoch, expected.best_epoch);
  EXPECT_EQ(progress.train_seconds, expected.train_seconds);
  EXPECT_EQ(progress.stopped_epoch, expected.stopped_epoch);
  EXPECT_EQ(progress.stopped_reason, expected.stopped_reason);
  ExpectSameTensors(after.model->parameters(), before.model->parameters());
  ExpectSameTensors(AdamMoments(*after.optimizer), AdamMoments(*before.optimizer));
  EXPECT_TRUE(torch::equal(torch::rand({3}), cpu_draw));
  EXPECT_TRUE(torch::equal(torch::rand({3}, after.augment_rng), augment_draw));
}

TEST(CheckpointTest, NoFileIsNoProgressAndLeavesTheStateAlone) {
  TempDirForTests temp;
  Trainee trainee(1);
  const std::vector<torch::Tensor> weights = {trainee.model->weight.clone(),
                                              trainee.model->bias.clone()};
  absl::StatusOr<std::optional<Progress>> read =
      ReadCheckpoint(temp / "checkpoint.pt", trainee.State());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->has_value());
  ExpectSameTensors(trainee.model->parameters(), weights);
}

// An archive as an earlier traind wrote it: the model, the optimizer and only `keys`.
void WriteOldFormat(const std::string& path, Trainee& trainee,
                    const std::vector<std::pair<std::string, torch::Tensor>>& keys) {
  torch::serialize::OutputArchive archive;
  trainee.model->save(archive);
  torch::serialize::OutputArchive optimizer_archive;
  trainee.optimizer->save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  for (const auto& [key, value] : keys) archive.write(key, value);
  archive.save_to(path);
}

// The first format counted epochs done ("epoch": 4 means resume at 5) and had no batch.
TEST(CheckpointTest, ReadsTheFirstFormatAsEpochsDone) {
  TempDirForTests temp;
  const std::string path = temp / "checkpoint.pt";
  Trainee before(1);
  before.TakeAStep();
  WriteOldFormat(path, before,
                 {{"epoch", torch::tensor(int64_t{4})},
                  {"best_validation", torch::tensor(0.5, torch::kFloat64)},
                  {"best_epoch", torch::tensor(int64_t{3})}});
  Trainee after(2);
  absl::StatusOr<std::optional<Progress>> read = ReadCheckpoint(path, after.State());
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->epoch, 5);
  EXPECT_EQ((*read)->batch, 0);
  EXPECT_EQ((*read)->global_step, 0);
  EXPECT_EQ((*read)->best_validation, 0.5);
  EXPECT_EQ((*read)->best_epoch, 3);
  ExpectSameTensors(after.model->parameters(), before.model->parameters());
}

// The mid-epoch format before training time and early stops were recorded: those take their
// defaults; the rest is read.
TEST(CheckpointTest, ReadsTheMidEpochFormatWithoutLaterKeys) {
  TempDirForTests temp;
  const std::string path = temp / "checkpoint.pt";
  Trainee before(1);
  WriteOldFormat(path, before,
                 {{"epoch", torch::tensor(int64_t{2})},
                  {"batch", torch::tensor(int64_t{40})},
                  {"loss_sum", torch::tensor(9.5, torch::kFloat64)},
                  {"global_step", torch::tensor(int64_t{140})},
                  {"best_validation", torch::tensor(0.25, torch::kFloat64)},
                  {"best_epoch", torch::tensor(int64_t{1})}});
  Trainee after(2);
  absl::StatusOr<std::optional<Progress>> read = ReadCheckpoint(path, after.State());
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  const Progress& progress = **read;
  EXPECT_EQ(progress.epoch, 2);
  EXPECT_EQ(progress.batch, 40);
  EXPECT_EQ(progress.loss_sum, 9.5);
  EXPECT_EQ(progress.global_step, 140);
  EXPECT_EQ(progress.epoch_seconds, 0);
  EXPECT_EQ(progress.train_seconds, 0);
  EXPECT_EQ(progress.stopped_epoch, 0);
  EXPECT_EQ(progress.stopped_reason, "");
}

}  // namespace
}  // namespace traind
