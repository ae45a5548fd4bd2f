#include "client/render/event_renderer.h"

#include <sstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(EventRendererTest, ProgressLineShowsEverything) {
  trainer::v1::StepMetrics step;
  step.set_epoch(2);
  step.set_epochs(10);
  step.set_batch(210);
  step.set_batches_per_epoch(421);
  step.set_loss(0.4123);
  step.set_samples_per_second(2500);
  step.set_step_seconds(0.05);
  step.set_current_allocated_bytes(200 << 20);
  step.set_driver_allocated_bytes(300 << 20);
  const std::string line = ProgressLine(step, 150);
  EXPECT_NE(line.find("epoch 2/10"), std::string::npos) << line;
  EXPECT_NE(line.find("[###"), std::string::npos) << line;
  EXPECT_NE(line.find("50% 210/421"), std::string::npos) << line;
  EXPECT_NE(line.find("loss 0.4123"), std::string::npos) << line;
  EXPECT_NE(line.find("2500 samples/s"), std::string::npos) << line;
  EXPECT_NE(line.find("200.0 MiB / 300.0 MiB"), std::string::npos) << line;
  // (421-210) + 8*421 batches at 0.05 s = 179 s
  EXPECT_NE(line.find("ETA 2m59s"), std::string::npos) << line;
  EXPECT_LE(ProgressLine(step, 60).size(), 60u);
}

// A program that prints "epoch 2 step 300 loss 0.4410" says neither its epoch count, its batches
// per epoch, its speed nor its memory: none of them is drawn as 0.
TEST(EventRendererTest, ProgressLineLeavesOutWhatAProgramDidNotSay) {
  trainer::v1::StepMetrics step;
  step.set_epoch(2);
  step.set_batch(300);
  step.set_loss(0.441);
  const std::string line = ProgressLine(step, 150);
  EXPECT_EQ(line, "epoch 2 | batch 300 | loss 0.4410");
}

TEST(EventRendererTest, ProgressLineShowsEveryRanksMemory) {
  trainer::v1::StepMetrics step;
  step.set_epoch(1);
  step.set_epochs(1);
  step.set_batches_per_epoch(100);
  for (int r = 0; r < 2; ++r) {
    trainer::v1::RankMemory* rank = step.add_ranks();
    rank->set_rank(r);
    rank->set_device(absl::StrCat("cuda:", r));
    rank->set_current_allocated_bytes((100 + r) << 20);
  }
  std::string line = ProgressLine(step, 200);
  EXPECT_NE(line.find("mem cuda:0 100.0 MiB, cuda:1 101.0 MiB"), std::string::npos) << line;
  // CPU ranks share a device name: by rank.
  step.mutable_ranks(0)->set_device("cpu");
  step.mutable_ranks(1)->set_device("cpu");
  line = ProgressLine(step, 200);
  EXPECT_NE(line.find("mem rank 0 100.0 MiB, rank 1 101.0 MiB"), std::string::npos) << line;
}

TEST(EventRendererTest, PlainModePrintsReferenceLinesAndStates) {
  std::ostringstream out, err;
  auto renderer = MakeEventRenderer(RenderMode::kPlain, 7, out, err);
  trainer::v1::JobEvent event;
  event.mutable_state_change()->set_state(trainer::v1::Job::RUNNING);
  renderer->OnEvent(event);
  event.Clear();
  event.mutable_step()->set_epoch(1);
  event.mutable_step()->set_epochs(1);
  event.mutable_step()->set_batches_per_epoch(421);
  event.mutable_step()->set_loss(2.3);
  renderer->OnEvent(event);
  EXPECT_EQ(out.str(), "Job 7 RUNNING\nEpoch: 001/001 | Batch 0000/0421 | Loss: 2.3000\n");
}

TEST(EventRendererTest, JsonModeIsOneEventPerLine) {
  std::ostringstream out, err;
  auto renderer = MakeEventRenderer(RenderMode::kJson, 7, out, err);
  trainer::v1::JobEvent event;
  event.set_seq(3);
  event.mutable_log()->set_text("hi");
  renderer->OnEvent(event);
  renderer->OnNote("reconnecting");
  EXPECT_EQ(out.str().find('\n'), out.str().size() - 1);
  EXPECT_NE(out.str().find("\"seq\":\"3\""), std::string::npos) << out.str();
  EXPECT_EQ(err.str(), "reconnecting\n");
}

}  // namespace
}  // namespace traind
