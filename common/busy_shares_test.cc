#include "common/busy_shares.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(BusySharesTest, TheRunFromTheStartTheTrainingFromTheFirstStepReport) {
  BusyShares shares;
  // Start-up: 1 busy of 10.
  BusyShares::Shares first = shares.AtStepReport({1, 10});
  EXPECT_DOUBLE_EQ(*first.run, 0.1);
  EXPECT_FALSE(first.training);  // the training starts here
  // Training: 9 busy of the next 10.
  BusyShares::Shares second = shares.AtStepReport({10, 20});
  EXPECT_DOUBLE_EQ(*second.run, 0.5);
  EXPECT_DOUBLE_EQ(*second.training, 0.9);
}

TEST(BusySharesTest, NothingCountedSaysNothingAndSharesStayInRange) {
  BusyShares shares;
  EXPECT_FALSE(shares.AtStepReport({0, 0}).run);
  EXPECT_FALSE(shares.AtStepReport({0, 0}).training);         // no time passed since the first
  EXPECT_DOUBLE_EQ(*shares.AtStepReport({30, 10}).run, 1.0);  // rounding past the whole
}

}  // namespace
}  // namespace traind
