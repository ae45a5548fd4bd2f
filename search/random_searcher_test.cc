#include "search/random_searcher.h"

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "absl/strings/numbers.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

SearchSpace Space(const std::vector<std::pair<std::string, std::string>>& fields) {
  absl::StatusOr<SearchSpace> space = ParseSearchSpace(fields);
  EXPECT_TRUE(space.ok()) << space.status();
  return *space;
}

double Number(const std::string& text) {
  double x = NAN;
  EXPECT_TRUE(absl::SimpleAtod(text, &x)) << text;
  return x;
}

const SearchSpace& MixedSpace() {
  static const SearchSpace* space =
      new SearchSpace(Space({{"learning_rate", "loguniform:1e-4:1e-1"},
                             {"dropout", "uniform:0:0.5"},
                             {"layers", "int:1:4"},
                             {"batch_size", "logint:16:1024"},
                             {"optimizer", "choice:sgd,adam"}}));
  return *space;
}

TEST(RandomSearcherTest, StaysInsideTheSpace) {
  for (int64_t k = 0; k < 500; ++k) {
    const ParamValues values = ProposeRandom(MixedSpace(), 7, k);
    ASSERT_EQ(values.size(), 5u);
    const double lr = Number(values.at("learning_rate"));
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 1e-1);
    const double dropout = Number(values.at("dropout"));
    EXPECT_GE(dropout, 0);
    EXPECT_LE(dropout, 0.5);
    int64_t layers, batch;
    ASSERT_TRUE(absl::SimpleAtoi(values.at("layers"), &layers)) << values.at("layers");
    EXPECT_GE(layers, 1);
    EXPECT_LE(layers, 4);
    ASSERT_TRUE(absl::SimpleAtoi(values.at("batch_size"), &batch)) << values.at("batch_size");
    EXPECT_GE(batch, 16);
    EXPECT_LE(batch, 1024);
    EXPECT_TRUE(values.at("optimizer") == "sgd" || values.at("optimizer") == "adam");
  }
}

TEST(RandomSearcherTest, IsAFunctionOfSeedAndTrialOnly) {
  EXPECT_EQ(ProposeRandom(MixedSpace(), 7, 3), ProposeRandom(MixedSpace(), 7, 3));
  EXPECT_NE(ProposeRandom(MixedSpace(), 7, 3), ProposeRandom(MixedSpace(), 7, 4));
  EXPECT_NE(ProposeRandom(MixedSpace(), 7, 3), ProposeRandom(MixedSpace(), 8, 3));
}

TEST(RandomSearcherTest, PinsAProposal) {
  // Trial 0 of seed 1: a change here changes every search that was ever started.
  const ParamValues values = ProposeRandom(MixedSpace(), 1, 0);
  EXPECT_EQ(values.at("learning_rate"), "0.053073843737488434");
  EXPECT_EQ(values.at("dropout"), "0.2988314397780026");
  EXPECT_EQ(values.at("layers"), "4");
  EXPECT_EQ(values.at("batch_size"), "432");
  EXPECT_EQ(values.at("optimizer"), "adam");
}

TEST(RandomSearcherTest, AFieldsValuesDoNotDependOnTheOtherFields) {
  const SearchSpace alone = Space({{"dropout", "uniform:0:0.5"}});
  for (int64_t k = 0; k < 20; ++k) {
    EXPECT_EQ(ProposeRandom(alone, 7, k).at("dropout"),
              ProposeRandom(MixedSpace(), 7, k).at("dropout"));
  }
}

TEST(RandomSearcherTest, DrawsEachKindWithItsDistribution) {
  const SearchSpace space = Space({{"lr", "loguniform:1e-4:1"},
                                   {"n", "int:1:4"},
                                   {"b", "logint:1:1000"},
                                   {"c", "choice:x,y,z"}});
  constexpr int kTrials = 8000;
  int lr_below_1e2 = 0, b_below_32 = 0;
  std::map<std::string, int> n_counts, c_counts;
  for (int64_t k = 0; k < kTrials; ++k) {
    const ParamValues values = ProposeRandom(space, 11, k);
    if (Number(values.at("lr")) < 1e-2) ++lr_below_1e2;  // half of the log axis
    if (Number(values.at("b")) < 31.5) ++b_below_32;     // log(31.5/0.5) / log(1000.5/0.5) = 0.545
    ++n_counts[values.at("n")];
    ++c_counts[values.at("c")];
  }
  EXPECT_NEAR(lr_below_1e2, kTrials / 2, 200);  // sd: 45
  EXPECT_NEAR(b_below_32, 0.545 * kTrials, 200);
  ASSERT_EQ(n_counts.size(), 4u);
  for (const auto& [value, count] : n_counts) EXPECT_NEAR(count, kTrials / 4, 200) << value;
  ASSERT_EQ(c_counts.size(), 3u);
  for (const auto& [value, count] : c_counts) EXPECT_NEAR(count, kTrials / 3, 200) << value;
}

}  // namespace
}  // namespace traind
