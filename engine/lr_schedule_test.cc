#include "engine/lr_schedule.h"

#include <cmath>

#include "gtest/gtest.h"

namespace traind {
namespace {

trainer::v1::JobSpec Spec(const std::string& schedule, int epochs, double warmup = 0) {
  trainer::v1::JobSpec spec;
  spec.set_lr_schedule(schedule);
  spec.set_epochs(epochs);
  spec.set_learning_rate(0.1);
  spec.set_warmup_epochs(warmup);
  return spec;
}

TEST(LrScheduleTest, ConstantNeverChanges) {
  const LrSchedule schedule(Spec("", 3), 100);
  EXPECT_FALSE(schedule.varies());
  EXPECT_DOUBLE_EQ(schedule.At(0), 0.1);
  EXPECT_DOUBLE_EQ(schedule.At(299), 0.1);
}

TEST(LrScheduleTest, CosineAtGivenSteps) {
  // 10 epochs of 100 steps, no warmup: 0.1 * (1 + cos(pi * t)) / 2 with t = step / 999.
  const LrSchedule schedule(Spec("cosine", 10), 100);
  EXPECT_TRUE(schedule.varies());
  EXPECT_DOUBLE_EQ(schedule.At(0), 0.1);
  EXPECT_NEAR(schedule.At(999), 0.0, 1e-12);
  EXPECT_NEAR(schedule.At(250), 0.1 * 0.5 * (1 + std::cos(M_PI * 250 / 999)), 1e-12);
  EXPECT_NEAR(schedule.At(500), 0.1 * 0.5 * (1 + std::cos(M_PI * 500 / 999)), 1e-12);
  for (int step = 1; step < 1000; ++step) EXPECT_LE(schedule.At(step), schedule.At(step - 1));
}

TEST(LrScheduleTest, WarmupRampsUpLinearlyThenTheScheduleStarts) {
  const LrSchedule schedule(Spec("cosine", 10, /*warmup=*/2), 100);  // 200 warmup steps
  EXPECT_NEAR(schedule.At(0), 0.1 / 200, 1e-15);
  EXPECT_NEAR(schedule.At(99), 0.1 * 100 / 200, 1e-15);
  EXPECT_NEAR(schedule.At(199), 0.1, 1e-15);
  EXPECT_NEAR(schedule.At(200), 0.1, 1e-15);  // the cosine's start
  EXPECT_NEAR(schedule.At(999), 0.0, 1e-12);
  // Warmup alone makes a constant schedule vary.
  EXPECT_TRUE(LrSchedule(Spec("constant", 10, 1), 100).varies());
}

TEST(LrScheduleTest, StepDecaysEveryNEpochs) {
  trainer::v1::JobSpec spec = Spec("step", 9);
  spec.set_lr_step_epochs(3);
  spec.set_lr_step_gamma(0.5);
  const LrSchedule schedule(spec, 10);
  EXPECT_DOUBLE_EQ(schedule.At(29), 0.1);
  EXPECT_DOUBLE_EQ(schedule.At(30), 0.05);
  EXPECT_DOUBLE_EQ(schedule.At(89), 0.025);
  // Defaults: every epochs / 3 epochs, times 0.1.
  const LrSchedule defaults(Spec("step", 9), 10);
  EXPECT_NEAR(defaults.At(30), 0.01, 1e-15);
}

TEST(LrScheduleTest, OneCycleWarmsUpFromATwentyFifthAndEndsFarBelow) {
  const LrSchedule schedule(Spec("onecycle", 10), 100);  // warmup: 30% = 300 steps
  EXPECT_NEAR(schedule.At(0), 0.1 / 25 + (0.1 - 0.1 / 25) / 300, 1e-12);
  EXPECT_NEAR(schedule.At(299), 0.1, 1e-12);
  EXPECT_NEAR(schedule.At(999), 0.1 / 25 / 1e4, 1e-12);
}

TEST(LrScheduleTest, StepsPastTheEndStayAtTheEnd) {
  const LrSchedule schedule(Spec("cosine", 2), 10);
  EXPECT_DOUBLE_EQ(schedule.At(1000), schedule.At(19));
  EXPECT_DOUBLE_EQ(schedule.At(-5), schedule.At(0));
}

}  // namespace
}  // namespace traind
