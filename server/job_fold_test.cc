#include "server/job_fold.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

using trainer::v1::Job;
using trainer::v1::JobEvent;

TEST(JobFoldTest, AResumeKeepsTheFirstStartAndCountsTheRuns) {
  Job job;
  JobEvent e;
  auto at = [&](Job::State state, int64_t seconds) {
    e.Clear();
    e.mutable_state_change()->set_state(state);
    e.mutable_time()->set_seconds(seconds);
    ApplyEvent(e, &job);
  };
  at(Job::QUEUED, 100);
  at(Job::RUNNING, 110);
  at(Job::QUEUED, 150);  // the daemon stopped, or the worker was killed
  EXPECT_EQ(job.start_time().seconds(), 110);
  at(Job::RUNNING, 200);
  at(Job::SUCCEEDED, 300);
  EXPECT_EQ(job.start_time().seconds(), 110);
  EXPECT_EQ(job.last_start_time().seconds(), 200);
  EXPECT_EQ(job.runs(), 2);
}

TEST(JobFoldTest, ResultIsBuiltFromEvents) {
  Job job;
  JobEvent e;
  e.set_seq(1);
  e.mutable_state_change()->set_state(Job::RUNNING);
  ApplyEvent(e, &job);
  EXPECT_EQ(job.state(), Job::RUNNING);
  EXPECT_TRUE(job.has_start_time());

  e.Clear();
  e.set_seq(2);
  e.mutable_epoch_summary()->set_epoch(1);
  e.mutable_epoch_summary()->set_epoch_seconds_no_eval(12.5);
  e.mutable_epoch_summary()->set_best_epoch(1);
  ApplyEvent(e, &job);
  e.mutable_epoch_summary()->set_epoch_seconds_no_eval(13.5);  // epoch 1 again, after a restart
  ApplyEvent(e, &job);
  e.Clear();
  e.set_seq(3);
  e.mutable_final_result()->set_test_accuracy(0.83);
  e.mutable_final_result()->set_peak_current_allocated_bytes(1000);
  ApplyEvent(e, &job);
  e.Clear();
  e.set_seq(4);
  e.mutable_state_change()->set_state(Job::SUCCEEDED);
  ApplyEvent(e, &job);

  EXPECT_EQ(job.state(), Job::SUCCEEDED);
  EXPECT_EQ(job.last_seq(), 4);
  EXPECT_DOUBLE_EQ(job.result().test_accuracy(), 0.83);
  ASSERT_EQ(job.result().epoch_seconds_no_eval_size(), 1);
  EXPECT_DOUBLE_EQ(job.result().epoch_seconds_no_eval(0), 13.5);
  EXPECT_EQ(job.result().peak_current_allocated_bytes(), 1000);
  EXPECT_TRUE(job.has_end_time());
  EXPECT_TRUE(IsTerminal(job.state()));
}

TEST(JobFoldTest, FailureKeepsTheReason) {
  Job job;
  JobEvent e;
  e.mutable_state_change()->set_state(Job::FAILED);
  e.mutable_state_change()->set_reason("worker killed by signal 9");
  ApplyEvent(e, &job);
  EXPECT_EQ(job.result().error(), "worker killed by signal 9");
}

}  // namespace
}  // namespace traind
