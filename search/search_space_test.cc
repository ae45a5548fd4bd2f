#include "search/search_space.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace traind {
namespace {

using Kind = Distribution::Kind;

TEST(SearchSpaceTest, ParsesEachKind) {
  struct Case {
    std::string text;
    Kind kind;
    double low, high;
    std::vector<std::string> choices;
  };
  const std::vector<Case> cases = {
      {"uniform:0.1:0.9", Kind::kUniform, 0.1, 0.9, {}},
      {"uniform:-1:1e3", Kind::kUniform, -1, 1000, {}},
      {"loguniform:1e-4:1e-1", Kind::kLogUniform, 1e-4, 1e-1, {}},
      {"int:1:8", Kind::kInt, 1, 8, {}},
      {"int:-3:-1", Kind::kInt, -3, -1, {}},
      {"int:1e0:8", Kind::kInt, 1, 8, {}},
      {"logint:16:1024", Kind::kLogInt, 16, 1024, {}},
      {"choice:64,128,256", Kind::kChoice, 0, 0, {"64", "128", "256"}},
      {"choice:adam", Kind::kChoice, 0, 0, {"adam"}},
      {"choice:a:b,c d", Kind::kChoice, 0, 0, {"a:b", "c d"}},  // kept as typed
  };
  for (const Case& c : cases) {
    absl::StatusOr<Distribution> d = ParseDistribution("f", c.text);
    ASSERT_TRUE(d.ok()) << c.text << ": " << d.status();
    EXPECT_EQ(d->kind, c.kind) << c.text;
    EXPECT_EQ(d->choices, c.choices) << c.text;
    if (c.kind != Kind::kChoice) {
      EXPECT_EQ(d->low, c.low) << c.text;
      EXPECT_EQ(d->high, c.high) << c.text;
    }
  }
}

TEST(SearchSpaceTest, RejectsWhatItCannotSampleWithAMessageThatSaysWhy) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"loguniform:0:1", "lr: loguniform needs 0 < low < high, got loguniform:0:1"},
      {"loguniform:-1:1", "loguniform needs 0 < low < high"},
      {"uniform:0.9:0.1", "lr: uniform needs low < high, got uniform:0.9:0.1"},
      {"uniform:1:1", "uniform needs low < high"},
      {"int:5:5", "int needs low < high"},
      {"logint:0:8", "logint needs 1 <= low < high"},
      {"uniform:0:inf", "uniform bounds must be finite numbers"},
      {"uniform:nan:1", "uniform bounds must be finite numbers"},
      {"int:1.5:3", "lr: int bounds must be integers, got int:1.5:3"},
      {"logint:1:2.5", "logint bounds must be integers"},
      {"int:1:99999999999999999", "int bounds must be within +-2^53"},
      {"int:1:9007199254740993", "int bounds must be within +-2^53"},
      {"int:1:1e30", "int bounds must be within +-2^53"},
      {"int:1:abc", "int bound 'abc' is not a number"},
      {"uniform:a:1", "uniform bound 'a' is not a number"},
      {"uniform:1", "lr: uniform needs uniform:LOW:HIGH, got uniform:1"},
      {"uniform:1:2:3", "uniform needs uniform:LOW:HIGH"},
      {"uniform:", "uniform needs uniform:LOW:HIGH"},
      {"choice:", "lr: choice needs at least one value, got choice:"},
      {"choice:1,,2", "choice value 2 is empty, got choice:1,,2"},
      {"choice:1,2,", "choice value 3 is empty"},
      {"choice:a,b,a", "choice lists 'a' twice"},
      {"normal:0:1",
       "lr: expected uniform:LOW:HIGH, loguniform:LOW:HIGH, int:LOW:HIGH, "
       "logint:LOW:HIGH or choice:A,B,..., got normal:0:1"},
      {"0.1", "expected uniform:LOW:HIGH"},
      {"", "expected uniform:LOW:HIGH"},
      {"Uniform:0:1", "expected uniform:LOW:HIGH"},
  };
  for (const auto& [text, message] : cases) {
    absl::StatusOr<Distribution> d = ParseDistribution("lr", text);
    ASSERT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(d.status().message().find(message), absl::string_view::npos)
        << text << " gave: " << d.status().message();
  }
}

TEST(SearchSpaceTest, CapsTextLengthAndChoiceCount) {
  const std::string long_text = "choice:" + std::string(5000, 'a');
  EXPECT_EQ(ParseDistribution("f", long_text).status().message(),
            "f: a distribution is at most 4096 characters, got 5007");
  std::string many = "choice:0";
  for (int i = 1; i <= 1000; ++i) many += "," + std::to_string(i);
  EXPECT_NE(ParseDistribution("f", many).status().message().find("at most 1000 values"),
            absl::string_view::npos);
  many = many.substr(0, many.rfind(','));  // 1000 values exactly
  EXPECT_TRUE(ParseDistribution("f", many).ok());
}

TEST(SearchSpaceTest, TextRoundTrips) {
  for (const std::string text :
       {"uniform:0.1:0.9", "loguniform:0.0001:0.1", "int:-3:8", "logint:16:1024",
        "choice:64,128,256", "uniform:0.1:0.30000000000000004", "int:1:9007199254740992"}) {
    absl::StatusOr<Distribution> d = ParseDistribution("f", text);
    ASSERT_TRUE(d.ok()) << text;
    EXPECT_EQ(DistributionText(*d), text);
    absl::StatusOr<Distribution> again = ParseDistribution("f", DistributionText(*d));
    ASSERT_TRUE(again.ok()) << text;
    EXPECT_EQ(again->low, d->low);
    EXPECT_EQ(again->high, d->high);
  }
  EXPECT_EQ(DistributionText(*ParseDistribution("f", "loguniform:1e-4:1e-1")),
            "loguniform:0.0001:0.1");
}

TEST(SearchSpaceTest, ValidateDistributionChecksWhatCodeBuilt) {
  Distribution d;
  d.kind = Kind::kChoice;
  d.choices = {"a,b"};
  EXPECT_EQ(ValidateDistribution("f", d).code(), absl::StatusCode::kInvalidArgument);
  d = Distribution{Kind::kLogUniform, 0, 1, {}};
  EXPECT_EQ(ValidateDistribution("f", d).message(),
            "f: loguniform needs 0 < low < high, got loguniform:0:1");
  d = Distribution{Kind::kUniform, 0, 1, {}};
  EXPECT_TRUE(ValidateDistribution("f", d).ok());
}

TEST(SearchSpaceTest, LooksLikeDistribution) {
  for (const char* yes : {"uniform:0:1", "loguniform:", "int:1:2", "logint:x", "choice:a"}) {
    EXPECT_TRUE(LooksLikeDistribution(yes)) << yes;
  }
  for (const char* no : {"0.1,0.2", "uniform", "int", "choice", "adam", "", "integer:1:2",
                         "Uniform:0:1", "x:uniform:0:1"}) {
    EXPECT_FALSE(LooksLikeDistribution(no)) << no;
  }
}

TEST(SearchSpaceTest, ParseSearchSpaceKeepsOrderAndRefusesAFieldTwice) {
  absl::StatusOr<SearchSpace> space = ParseSearchSpace(
      {{"learning_rate", "loguniform:1e-4:1e-1"}, {"batch_size", "choice:64,128"}});
  ASSERT_TRUE(space.ok()) << space.status();
  ASSERT_EQ(space->params.size(), 2u);
  EXPECT_EQ(space->params[0].first, "learning_rate");
  EXPECT_EQ(space->params[1].first, "batch_size");

  EXPECT_EQ(ParseSearchSpace({{"lr", "uniform:0:1"}, {"lr", "uniform:0:2"}}).status().message(),
            "lr: searched twice; give each field one distribution");
  EXPECT_EQ(ParseSearchSpace({{"", "uniform:0:1"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSearchSpace({{"lr", "uniform:1:0"}}).status().message(),
            "lr: uniform needs low < high, got uniform:1:0");
  EXPECT_TRUE(ParseSearchSpace({})->params.empty());
  std::vector<std::pair<std::string, std::string>> many;
  for (size_t i = 0; i <= kMaxSearchParams; ++i) {
    many.emplace_back("param.p" + std::to_string(i), "uniform:0:1");
  }
  EXPECT_EQ(ParseSearchSpace(many).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SearchSpaceTest, FormatRealIsTheShortestRoundTrip) {
  EXPECT_EQ(FormatReal(0.1), "0.1");
  EXPECT_EQ(FormatReal(0.0031622776601683794), "0.0031622776601683794");
  EXPECT_EQ(FormatReal(1e-4), "0.0001");
  EXPECT_EQ(FormatReal(1e-5), "1e-05");
  EXPECT_EQ(FormatReal(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatReal(128), "128");
  EXPECT_EQ(FormatReal(-2.5), "-2.5");
}

}  // namespace
}  // namespace traind
