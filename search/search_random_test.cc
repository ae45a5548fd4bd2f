// The streams are part of the search's contract: a change to any pinned number below changes
// every search's trials, and must be deliberate.
#include "search/search_random.h"

#include <cmath>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(SearchRandomTest, SplitMix64MatchesTheReferenceSequence) {
  // The published SplitMix64 outputs for seed 0.
  SearchRng rng(0);
  EXPECT_EQ(rng.Next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(rng.Next(), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(rng.Next(), 0x06c45d188009454fULL);
}

TEST(SearchRandomTest, StableHashIsFnv1a) {
  EXPECT_EQ(StableHash(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(StableHash("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(StableHash("foobar"), 0x85944171f73967e8ULL);
}

TEST(SearchRandomTest, PinsTheFirstOutputsOfAStream) {
  // Checked against an independent Python transcription of StableHash, StreamSeed and SplitMix64.
  SearchRng rng(StreamSeed(42, 7, StableHash("random:learning_rate")));
  EXPECT_EQ(rng.Next(), 13474403530922142994ULL);
  EXPECT_EQ(rng.Next(), 14496764823596474496ULL);
  EXPECT_EQ(rng.Uniform01(), 3770914821270075 * 0x1.0p-53);  // 0.41865564584742941
  EXPECT_EQ(rng.UniformInt(10), 7u);
}

TEST(SearchRandomTest, StreamSeedSeparatesEachKey) {
  std::set<uint64_t> seeds;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    for (int64_t trial = -1; trial < 4; ++trial) {
      for (uint64_t purpose = 0; purpose < 4; ++purpose) {
        seeds.insert(StreamSeed(seed, trial, purpose));
      }
    }
  }
  EXPECT_EQ(seeds.size(), 4u * 5u * 4u);
  // Keys do not trade places: (seed, trial) and (trial, seed) differ.
  EXPECT_NE(StreamSeed(1, 2, 0), StreamSeed(2, 1, 0));
}

TEST(SearchRandomTest, Uniform01IsInTheUnitIntervalWithMeanOneHalf) {
  SearchRng rng(1);
  double sum = 0;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const double u = rng.Uniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / kDraws, 0.5, 0.005);  // sd of the mean: 0.0009
}

TEST(SearchRandomTest, UniformIntCoversEveryValueAlike) {
  SearchRng rng(2);
  std::vector<int> counts(7);
  constexpr int kDraws = 70000;
  for (int i = 0; i < kDraws; ++i) ++counts[rng.UniformInt(7)];
  for (int c : counts) EXPECT_NEAR(c, kDraws / 7, 500);  // sd: 93
  EXPECT_EQ(rng.UniformInt(1), 0u);
}

TEST(SearchRandomTest, NormalQuantileInvertsTheCdf) {
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-13);
  EXPECT_EQ(NormalQuantile(0.5), 0.0);
  for (double p : {1e-300, 1e-20, 1e-6, 0.02, 0.3, 0.7, 0.98, 1 - 1e-6}) {
    EXPECT_NEAR(NormalCdf(NormalQuantile(p)) / p, 1.0, 1e-12) << p;
  }
  EXPECT_EQ(NormalQuantile(0), -HUGE_VAL);
  EXPECT_EQ(NormalQuantile(1), HUGE_VAL);
}

TEST(SearchRandomTest, LogNormalMassIsAccurateInBothTails) {
  EXPECT_NEAR(LogNormalMass(-1, 1), std::log(0.6826894921370859), 1e-14);
  // The right tail: 1 - Phi(6) = 9.865876450377e-10, which Phi(inf) - Phi(6) would round away.
  EXPECT_NEAR(LogNormalMass(6, HUGE_VAL), std::log(9.865876450376982e-10), 1e-9);
  EXPECT_EQ(LogNormalMass(3, 4), LogNormalMass(-4, -3));
  // Beyond underflow: finite, tiny, and still decreasing with distance.
  const double far = LogNormalMass(50, 51);
  EXPECT_TRUE(std::isfinite(far));
  EXPECT_LT(far, -1000);
  EXPECT_LT(LogNormalMass(60, 61), far);
}

TEST(SearchRandomTest, TruncatedNormalStaysInside) {
  SearchRng rng(3);
  const std::vector<std::pair<double, double>> intervals = {
      {-1, 1}, {0.5, 0.7}, {-50, -49}, {8, 9}, {-0.001, 100}};
  for (const auto& [a, b] : intervals) {
    for (int i = 0; i < 1000; ++i) {
      const double x = SampleTruncatedNormal(rng, a, b);
      ASSERT_GE(x, a);
      ASSERT_LE(x, b);
    }
  }
  // On [-1, 1] the mean is 0 and the variance 1 - 2 phi(1) / (Phi(1) - Phi(-1)) = 0.2911.
  double sum = 0, squares = 0;
  constexpr int kDraws = 50000;
  for (int i = 0; i < kDraws; ++i) {
    const double x = SampleTruncatedNormal(rng, -1, 1);
    sum += x;
    squares += x * x;
  }
  EXPECT_NEAR(sum / kDraws, 0, 0.01);
  EXPECT_NEAR(squares / kDraws, 0.2911, 0.01);
}

}  // namespace
}  // namespace traind
