// ReadPacer: the runner's pauses between reads of a flooding program's output.
#include "script/read_pacing.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

constexpr size_t kMiB = 1 << 20;
const absl::Time kStart = absl::FromUnixSeconds(1000);

absl::Time At(int64_t ms) { return kStart + absl::Milliseconds(ms); }

// A pacer that has just read a flood at At(0).
ReadPacer Flooding(size_t capacity) {
  ReadPacer pacer(capacity);
  (void)pacer.Next(ReadPacer::kFloodBytes, false, At(-10));
  (void)pacer.Next(ReadPacer::kFloodBytes, false, At(0));
  return pacer;
}

TEST(ReadPacerTest, OutputNowAndThenIsReadAtOnce) {
  ReadPacer pacer(kMiB);
  EXPECT_EQ(pacer.Next(100, false, At(0)), absl::ZeroDuration());
  EXPECT_EQ(pacer.Next(ReadPacer::kFloodBytes - 1, false, At(1)), absl::ZeroDuration());
  EXPECT_EQ(pacer.Next(0, false, At(201)), absl::ZeroDuration());  // a poll that timed out
  EXPECT_FALSE(pacer.flooding());
  (void)pacer.Next(ReadPacer::kFloodBytes, false, At(202));
  EXPECT_TRUE(pacer.flooding());
}

TEST(ReadPacerTest, ANearlyFullPipeIsReadAgainAtOnce) {
  ReadPacer pacer = Flooding(kMiB);
  EXPECT_EQ(pacer.Next(kMiB / 2, true, At(50)), absl::ZeroDuration());
}

TEST(ReadPacerTest, AFloodIntoAMegabytePipeIsReadInTheLongestPauses) {
  // 100,000 lines a second of 35 bytes: 175 KB in 50 ms, a sixth of the pipe.
  ReadPacer pacer = Flooding(kMiB);
  EXPECT_EQ(pacer.Next(175000, false, At(50)), ReadPacer::kLongest);
}

TEST(ReadPacerTest, APauseLetsTheRateJustSeenFillAQuarterOfThePipe) {
  // 100 KiB in 10 ms into a 1 MiB pipe: a quarter (256 KiB) fills in 25.6 ms.
  ReadPacer pacer = Flooding(kMiB);
  EXPECT_NEAR(absl::ToDoubleMilliseconds(pacer.Next(100 * 1024, false, At(10))), 25.6, 1e-6);
  // 200 KiB in the next 5 ms (40 MB/s): a quarter would fill in 6.4 ms, under the shortest.
  EXPECT_EQ(pacer.Next(200 * 1024, false, At(15)), ReadPacer::kShortest);
}

TEST(ReadPacerTest, APipeTheSystemWouldNotEnlargeGetsTheShortestUnderAFastFlood) {
  // 20,000 bytes in 5 ms (4 MB/s) into 64 KiB: a quarter fills in about 4 ms.
  ReadPacer pacer = Flooding(64 * 1024);
  EXPECT_EQ(pacer.Next(20000, false, At(5)), ReadPacer::kShortest);
}

TEST(ReadPacerTest, AFloodAfterAQuietSpellIsTakenToBeFast) {
  // 200 ms of quiet (a poll that timed out), then 8 KiB: not a rate of 40 KB/s but the start of
  // a flood that may fill a 64 KiB pipe in 20 ms: the shortest pause. A 1 MiB pipe takes 50 ms
  // of a fast flood (5 MB/s) to fill a quarter: the longest.
  ReadPacer small = Flooding(64 * 1024);
  EXPECT_EQ(small.Next(0, false, At(200)), absl::ZeroDuration());
  EXPECT_EQ(small.Next(8192, false, At(201)), ReadPacer::kShortest);
  // The next read knows the rate: 8 KiB in 10 ms into 64 KiB, a quarter in 20 ms.
  EXPECT_EQ(small.Next(8192, false, At(211)), absl::Milliseconds(20));
  ReadPacer large(kMiB);
  EXPECT_EQ(large.Next(8192, false, At(0)), ReadPacer::kLongest);  // the first read of all
  EXPECT_EQ(large.Next(0, false, At(200)), absl::ZeroDuration());
  EXPECT_EQ(large.Next(8192, false, At(201)), ReadPacer::kLongest);
}

}  // namespace
}  // namespace traind
