#include "common/time_limit.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(TimeLimitTest, SlurmsFormsAreRead) {
  EXPECT_EQ(*ParseTimeLimit("30"), absl::Minutes(30));
  EXPECT_EQ(*ParseTimeLimit("0:02"), absl::Seconds(2));
  EXPECT_EQ(*ParseTimeLimit("45:30"), absl::Minutes(45) + absl::Seconds(30));
  EXPECT_EQ(*ParseTimeLimit("2:00:00"), absl::Hours(2));
  EXPECT_EQ(*ParseTimeLimit("1-00"), absl::Hours(24));
  EXPECT_EQ(*ParseTimeLimit("1-02:30"), absl::Hours(26) + absl::Minutes(30));
  EXPECT_EQ(*ParseTimeLimit("1-00:00:05"), absl::Hours(24) + absl::Seconds(5));
}

TEST(TimeLimitTest, AnythingElseIsRefusedNamingTheField) {
  for (const char* bad :
       {"", "0", "0:00", "-5", "1h", "1:2:3:4", "1-", "a:b", "::", "400-00", "99999999999999999"}) {
    const absl::StatusOr<absl::Duration> parsed = ParseTimeLimit(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(parsed.status().message().rfind("time_limit: ", 0), 0u) << parsed.status();
  }
}

}  // namespace
}  // namespace traind
