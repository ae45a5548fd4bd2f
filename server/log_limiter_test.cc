#include "server/log_limiter.h"

#include <sstream>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

int Lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

TEST(LogLimiterTest, ABurstOfLinesIsCutToTheLimitAndSummedUpLater) {
  std::ostringstream out;
  absl::Time now = absl::FromUnixSeconds(1000);
  LogLimiter limiter({/*burst=*/3, absl::Seconds(10), "refused calls"}, &out, [&] { return now; });
  for (int i = 0; i < 5000; ++i) limiter.Log("traind: refused a call " + std::to_string(i));
  EXPECT_EQ(Lines(out.str()), 3);
  EXPECT_NE(out.str().find("refused a call 2\n"), std::string::npos);
  EXPECT_EQ(out.str().find("refused a call 3\n"), std::string::npos);

  now += absl::Seconds(9);  // the same window: still counted, not written
  limiter.Log("traind: refused a call late");
  EXPECT_EQ(Lines(out.str()), 3);

  now += absl::Seconds(2);  // a new window: the summary first, then the line
  limiter.Log("traind: refused a call again");
  const std::vector<std::string> lines = absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[3], "traind: 4998 more refused calls not shown (at most 3 every 10s)");
  EXPECT_EQ(lines[4], "traind: refused a call again");
}

TEST(LogLimiterTest, AQuietWindowHasNoSummary) {
  std::ostringstream out;
  absl::Time now = absl::FromUnixSeconds(1000);
  LogLimiter limiter({/*burst=*/3, absl::Seconds(10), "lines"}, &out, [&] { return now; });
  limiter.Log("a");
  now += absl::Minutes(1);
  limiter.Log("b");
  EXPECT_EQ(out.str(), "a\nb\n");
}

}  // namespace
}  // namespace traind
