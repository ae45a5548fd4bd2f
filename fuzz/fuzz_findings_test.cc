// Findings of the fuzz targets (and of reading the code they cover) that no small input file
// reproduces. Each test names the bug it pins.
#include <climits>

#include "gtest/gtest.h"
#include "server/job_fold.h"
#include "server/sweep_expansion.h"

namespace traind {
namespace {

// 2^14 configurations x 2^20 grid values x 2^30 repeats = 2^64: the member count, an int64_t,
// overflowed (undefined behaviour; here it wrapped to 0, under the limit), so a SubmitSweep of
// ~3 MB made traind try to build 2^64 jobs.
TEST(FuzzFindingsTest, SweepMemberCountCannotOverflow) {
  trainer::v1::SweepSpec spec;
  for (int i = 0; i < (1 << 14); ++i) spec.add_configs();
  trainer::v1::SweepAxis* axis = spec.add_axes();
  axis->set_field("name");
  for (int i = 0; i < (1 << 20); ++i) axis->add_values("x");
  spec.set_repeat(1 << 30);
  absl::StatusOr<std::vector<trainer::v1::JobSpec>> members = ExpandSweep(spec);
  EXPECT_EQ(members.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(members.status().message().find("at most"), absl::string_view::npos);
}

// Too many configurations is refused before each is merged onto the base (a copy each).
TEST(FuzzFindingsTest, TooManyConfigsAreRefusedBeforeCopying) {
  trainer::v1::SweepSpec spec;
  spec.mutable_base()->set_name(std::string(1 << 20, 'n'));
  for (int i = 0; i < 2 * kMaxSweepMembers; ++i) spec.add_configs();
  EXPECT_EQ(ExpandSweep(spec).status().code(), absl::StatusCode::kInvalidArgument);
}

// An EpochSummary with epoch 2^31 - 1 grew the job's epoch_seconds_no_eval to 2^31 - 1 entries.
TEST(FuzzFindingsTest, AbsurdEpochIsNotRecorded) {
  trainer::v1::Job job;
  trainer::v1::JobEvent event;
  event.mutable_epoch_summary()->set_epoch(INT_MAX);
  event.mutable_epoch_summary()->set_best_epoch(INT_MAX);
  ApplyEvent(event, &job);
  EXPECT_EQ(job.result().epoch_seconds_no_eval_size(), 0);
  event.mutable_epoch_summary()->set_epoch(3);
  event.mutable_epoch_summary()->set_epoch_seconds_no_eval(2.5);
  ApplyEvent(event, &job);
  ASSERT_EQ(job.result().epoch_seconds_no_eval_size(), 3);
  EXPECT_DOUBLE_EQ(job.result().epoch_seconds_no_eval(2), 2.5);
}

}  // namespace
}  // namespace traind
