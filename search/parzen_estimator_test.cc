#include "search/parzen_estimator.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(ParzenEstimatorTest, BandwidthsFollowTheNeighbourRuleAndTheClip) {
  // Sorted with the prior's centre: 0.1, 0.15, (0.5), 0.9. The smallest takes its inner gap
  // (0.05), the middle one its larger gap (0.35), the largest its inner gap (0.4); the floor is
  // 1 / (3 + 2) = 0.2. The prior's kernel comes last: the centre, the whole range.
  const NumericParzen p({0.1, 0.15, 0.9}, {1, 1, 1}, 0, 1, 1.0);
  const std::vector<double> mus = {0.1, 0.15, 0.9, 0.5};
  const std::vector<double> sigmas = {0.2, 0.35, 0.4, 1.0};
  ASSERT_EQ(p.mus().size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(p.mus()[i], mus[i]);
    EXPECT_DOUBLE_EQ(p.sigmas()[i], sigmas[i]) << i;
  }
}

TEST(ParzenEstimatorTest, IdenticalValuesGetTheFloorNotZero) {
  const NumericParzen p({3, 3, 3, 3}, {1, 1, 1, 1}, 0, 6, 1.0);
  for (size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(p.sigmas()[i], 1.0);  // 6 / (4 + 2)
  EXPECT_TRUE(std::isfinite(p.LogPdf(3)));
}

TEST(ParzenEstimatorTest, DensityIntegratesToOneOverTheRange) {
  const NumericParzen p({-2.1, -1.9, 0.5, 3.9}, {0.2, 1, 1, 1}, -4, 4, 1.0);
  constexpr int kSteps = 20000;
  const double h = 8.0 / kSteps;
  double integral = 0;
  for (int i = 0; i <= kSteps; ++i) {
    const double w = (i == 0 || i == kSteps) ? 0.5 : 1.0;
    integral += w * std::exp(p.LogPdf(-4 + i * h)) * h;
  }
  EXPECT_NEAR(integral, 1.0, 1e-6);
  EXPECT_NEAR(p.LogMass(-4, 4), 0.0, 1e-12);
  // Unit intervals of an integer range [1, 7] (modelled on [0.5, 7.5]) share all the mass.
  const NumericParzen q({2, 2, 6}, {1, 1, 1}, 0.5, 7.5, 1.0);
  double total = 0;
  for (int k = 1; k <= 7; ++k) total += std::exp(q.LogMass(k - 0.5, k + 0.5));
  EXPECT_NEAR(total, 1.0, 1e-12);
  EXPECT_GT(q.LogMass(1.5, 2.5), q.LogMass(3.5, 4.5));
}

TEST(ParzenEstimatorTest, WithoutObservationsOnlyThePriorRemains) {
  const NumericParzen p({}, {}, 0, 1, 1.0);
  ASSERT_EQ(p.mus().size(), 1u);
  EXPECT_DOUBLE_EQ(p.sigmas()[0], 1.0);
  EXPECT_GT(p.LogPdf(0.5), p.LogPdf(0.0));
}

TEST(ParzenEstimatorTest, SamplesStayInRangeAndFollowTheKernels) {
  // One observation at 0.8 with weight 9 against the prior's 1: most draws land above 0.5.
  const NumericParzen p({0.8}, {9}, 0, 1, 1.0);
  SearchRng rng(5);
  int near = 0;
  constexpr int kDraws = 10000;
  for (int i = 0; i < kDraws; ++i) {
    const double y = p.Sample(rng);
    ASSERT_GE(y, 0);
    ASSERT_LE(y, 1);
    if (y > 0.5) ++near;
  }
  // Kernel at 0.8, bandwidth 1/3 (the floor) with weight 0.9; the prior at 0.5 with 0.1.
  const double kernel = (NormalCdf(0.6) - NormalCdf(-0.9)) / (NormalCdf(0.6) - NormalCdf(-2.4));
  EXPECT_NEAR(static_cast<double>(near) / kDraws, 0.9 * kernel + 0.1 * 0.5, 0.015);  // sd: 0.0044
}

TEST(ParzenEstimatorTest, CategoricalSmoothsEachObservationAndAddsAUniformPrior) {
  // One observation of value 0 among 3: smoothing 1/2 on each value, kernel total 2.5; the
  // mixture is (observation + prior) / 2: (0.4 + 0.2 + 1/3) / 2 for value 0, (0.2 + 1/3) / 2 for
  // the others.
  const CategoricalParzen p({0}, {1}, 3, 1.0);
  EXPECT_NEAR(std::exp(p.LogPmf(0)), (0.6 + 1.0 / 3) / 2, 1e-15);
  EXPECT_NEAR(std::exp(p.LogPmf(1)), (0.2 + 1.0 / 3) / 2, 1e-15);
  EXPECT_NEAR(std::exp(p.LogPmf(0)) + 2 * std::exp(p.LogPmf(2)), 1.0, 1e-15);

  const CategoricalParzen none({}, {}, 4, 1.0);
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(std::exp(none.LogPmf(c)), 0.25, 1e-15);

  SearchRng rng(6);
  std::vector<int> counts(3);
  constexpr int kDraws = 30000;
  for (int i = 0; i < kDraws; ++i) ++counts[p.Sample(rng)];
  EXPECT_NEAR(counts[0], kDraws * std::exp(p.LogPmf(0)), 300);  // sd: 86
  EXPECT_NEAR(counts[1], kDraws * std::exp(p.LogPmf(1)), 300);
}

}  // namespace
}  // namespace traind
