#include "supervise/rank_events.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

using trainer::v1::JobEvent;
using trainer::v1::LogLine;

JobEvent Error(const std::string& text) {
  JobEvent event;
  event.mutable_log()->set_severity(LogLine::ERROR);
  event.mutable_log()->set_text(text);
  return event;
}

TEST(RankEventsTest, DropsStateChangesNotesResultsAndNamesTheRankOfTheFirstError) {
  RankEvents seen;
  JobEvent state;
  state.mutable_state_change()->set_state(trainer::v1::Job::SUCCEEDED);
  EXPECT_FALSE(seen.Accept(&state, "rank 1: "));  // a worker may not decide the job's state

  JobEvent info;
  info.mutable_log()->set_text("Start-up: 0.10 s");
  EXPECT_TRUE(seen.Accept(&info, "rank 1: "));
  EXPECT_EQ(info.log().text(), "Start-up: 0.10 s");  // only errors are named
  EXPECT_FALSE(seen.got_result());

  JobEvent first = Error("out of memory");
  JobEvent second = Error("collective timed out");
  EXPECT_TRUE(seen.Accept(&first, "rank 1 (b): "));
  EXPECT_TRUE(seen.Accept(&second, "rank 0 (a): "));
  EXPECT_EQ(first.log().text(), "rank 1 (b): out of memory");
  EXPECT_EQ(seen.first_error(), "rank 1 (b): out of memory");

  JobEvent result;
  result.mutable_final_result()->set_test_accuracy(0.9);
  EXPECT_TRUE(seen.Accept(&result, ""));
  EXPECT_TRUE(seen.got_result());

  RankEvents one_rank;
  JobEvent alone = Error("bad data");
  one_rank.Accept(&alone, "");
  EXPECT_EQ(alone.log().text(), "bad data");  // one rank: nothing to name
  EXPECT_EQ(one_rank.first_error(), "bad data");
}

}  // namespace
}  // namespace traind
