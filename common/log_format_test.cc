#include "common/log_format.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(LogFormatTest, StepLineMatchesTheReferenceScript) {
  trainer::v1::StepMetrics step;
  step.set_epoch(1);
  step.set_epochs(10);
  step.set_batch(100);
  step.set_batches_per_epoch(421);
  step.set_loss(0.26462);
  EXPECT_EQ(FormatStepLine(step), "Epoch: 001/010 | Batch 0100/0421 | Loss: 0.2646");
}

TEST(LogFormatTest, EpochLines) {
  trainer::v1::EpochSummary s;
  s.set_evaluated(true);
  s.set_epoch(1);
  s.set_epochs(1);
  s.set_train_accuracy(0.9732);
  s.set_validation_accuracy(0.9777);
  s.set_best_validation_accuracy(0.9777);
  s.set_best_epoch(1);
  s.set_epoch_seconds_no_eval(10.8);
  s.set_elapsed_seconds(15);
  auto lines = FormatEpochLines(s);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "Time / epoch without evaluation: 0.18 min");
  EXPECT_EQ(lines[1],
            "Epoch: 001/001 | Train: 97.32% | Validation: 97.77% | Best Validation (Ep. 001): "
            "97.77%");
  EXPECT_EQ(lines[2], "Time elapsed: 0.25 min");
}

TEST(LogFormatTest, FinalLines) {
  trainer::v1::FinalResult r;
  r.set_total_training_seconds(15);
  r.set_test_accuracy(0.9741);
  r.set_total_seconds(16.2);
  auto lines = FormatFinalLines(r);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "Total Training Time: 0.25 min");
  EXPECT_EQ(lines[1], "Test accuracy 97.41%");
  EXPECT_EQ(lines[2], "Total Time: 0.27 min");
}

TEST(LogFormatTest, BytesAndDurations) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(3 * 1024 * 1024 / 2), "1.5 MiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 30), "3.00 GiB");
  EXPECT_EQ(FormatDuration(42.4), "42s");
  EXPECT_EQ(FormatDuration(185), "3m05s");
  EXPECT_EQ(FormatDuration(3720), "1h02m");
}

}  // namespace
}  // namespace traind
