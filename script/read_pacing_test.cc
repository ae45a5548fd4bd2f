// ReadPause: the runner's pauses between reads of a flooding program's output.
#include "script/read_pacing.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

constexpr size_t kMiB = 1 << 20;

TEST(ReadPauseTest, OutputNowAndThenIsReadAtOnce) {
  EXPECT_EQ(ReadPause(100, false, absl::Milliseconds(200), kMiB), absl::ZeroDuration());
  EXPECT_EQ(ReadPause(ReadPacing::kFloodBytes - 1, false, absl::Milliseconds(1), kMiB),
            absl::ZeroDuration());
}

TEST(ReadPauseTest, ANearlyFullPipeIsReadAgainAtOnce) {
  EXPECT_EQ(ReadPause(kMiB / 2, true, absl::Milliseconds(50), kMiB), absl::ZeroDuration());
}

TEST(ReadPauseTest, AFloodIntoAMegabytePipeIsReadInTheLongestPauses) {
  // 100,000 lines a second of 35 bytes: 175 KB in 50 ms, a sixth of the pipe.
  EXPECT_EQ(ReadPause(175000, false, absl::Milliseconds(50), kMiB), ReadPacing::kLongest);
}

TEST(ReadPauseTest, APauseLetsTheRateJustSeenFillAQuarterOfThePipe) {
  // 64 KiB in 20 ms (3.2 MB/s) into a 1 MiB pipe: a quarter (256 KiB) takes 80 ms, over the
  // longest; into a 512 KiB pipe, 128 KiB takes 40 ms.
  EXPECT_EQ(ReadPause(64 * 1024, false, absl::Milliseconds(20), kMiB), ReadPacing::kLongest);
  EXPECT_EQ(ReadPause(64 * 1024, false, absl::Milliseconds(20), kMiB / 2), absl::Milliseconds(40));
}

TEST(ReadPauseTest, APipeTheSystemWouldNotEnlargeGetsTheShortest) {
  // 35 KB in 10 ms into 64 KiB: a quarter fills in under 5 ms.
  EXPECT_EQ(ReadPause(35000, false, absl::Milliseconds(10), 64 * 1024), ReadPacing::kShortest);
}

}  // namespace
}  // namespace traind
