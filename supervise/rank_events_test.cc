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

namespace traind {
namespace {

// What no honest job reports is not stored: a program printing "acc 150" (150%), a negative time,
// negative memory, more of its own metrics than a job may have.
TEST(RankEventsTest, ImpossibleValuesAreDroppedBeforeTheyAreStored) {
  RankEvents seen;
  trainer::v1::JobEvent epoch;
  auto* summary = epoch.mutable_epoch_summary();
  summary->set_epoch(2);
  summary->set_train_accuracy(1.5);
  summary->set_validation_accuracy(0.91);
  summary->set_best_validation_accuracy(-0.2);
  summary->set_best_epoch(1);
  summary->set_epoch_seconds_no_eval(-3);
  EXPECT_TRUE(seen.Accept(&epoch, ""));
  EXPECT_FALSE(epoch.epoch_summary().has_train_accuracy());
  EXPECT_DOUBLE_EQ(epoch.epoch_summary().validation_accuracy(), 0.91);  // a real one stays
  EXPECT_EQ(epoch.epoch_summary().best_epoch(), 0);
  EXPECT_EQ(epoch.epoch_summary().epoch_seconds_no_eval(), 0);

  trainer::v1::JobEvent step;
  step.mutable_step()->set_loss(0.3);
  step.mutable_step()->set_step_seconds(-1);
  step.mutable_step()->set_current_allocated_bytes(-5);
  for (int i = 0; i < 20; ++i)
    (*step.mutable_step()->mutable_metrics())["m" + std::to_string(i)] = i;
  (*step.mutable_step()->mutable_metrics())[std::string(60, 'x')] = 1;
  EXPECT_TRUE(seen.Accept(&step, ""));
  EXPECT_FALSE(step.step().has_step_seconds());
  EXPECT_FALSE(step.step().has_current_allocated_bytes());
  EXPECT_EQ(step.step().metrics().size(), kMaxEventMetrics);
  EXPECT_EQ(step.step().metrics().count(std::string(60, 'x')), 0u);

  trainer::v1::JobEvent result;
  result.mutable_final_result()->set_test_accuracy(97.4);  // percent, not a fraction
  result.mutable_final_result()->set_total_seconds(12);
  EXPECT_TRUE(seen.Accept(&result, ""));
  EXPECT_FALSE(result.final_result().has_test_accuracy());
  EXPECT_EQ(result.final_result().total_seconds(), 12);
}

// A size that grows with user input stays within the store's bounds: an evaluation of 2,043
// classes keeps its per-class figures but not its 4.2 million-count confusion matrix, and any
// event still too large becomes a warning that says what it was.
TEST(RankEventsTest, AnEventTooLargeForAnyClientIsBoundedBeforeItIsStored) {
  RankEvents seen;
  JobEvent evaluation;
  auto* e = evaluation.mutable_evaluation();
  e->set_classes(2043);
  for (int c = 0; c < 2043; ++c) {
    e->add_class_accuracy(0.5);
    e->add_class_samples(2);
  }
  for (int i = 0; i < 2043 * 2043; ++i) e->add_confusion(i % 3);
  EXPECT_TRUE(seen.Accept(&evaluation, ""));
  EXPECT_EQ(evaluation.evaluation().confusion_size(), 0);
  EXPECT_EQ(evaluation.evaluation().class_accuracy_size(), 2043);
  EXPECT_LT(evaluation.ByteSizeLong(), kMaxEventBytes);

  JobEvent small;  // 10 classes: the matrix stays
  small.mutable_evaluation()->set_classes(10);
  for (int i = 0; i < 100; ++i) small.mutable_evaluation()->add_confusion(1);
  EXPECT_TRUE(seen.Accept(&small, ""));
  EXPECT_EQ(small.evaluation().confusion_size(), 100);

  JobEvent huge;
  huge.mutable_time()->set_seconds(42);
  huge.mutable_evaluation()->set_classes(10);
  for (int i = 0; i < 300000; ++i) huge.mutable_evaluation()->add_class_accuracy(0.5);
  EXPECT_TRUE(seen.Accept(&huge, ""));
  ASSERT_TRUE(huge.has_log());
  EXPECT_EQ(huge.log().severity(), LogLine::WARNING);
  EXPECT_EQ(huge.log().text(),
            "an event (evaluation) of 2.3 MiB was not stored: larger than 1.0 MiB");
  EXPECT_EQ(huge.time().seconds(), 42);
}

}  // namespace
}  // namespace traind
