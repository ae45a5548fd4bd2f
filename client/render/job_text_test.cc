// DescribeJob, the text `trainctl show` prints: each section once, in order.
#include "client/render/job_text.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

using trainer::v1::Job;

Job FinishedJob() {
  Job job;
  job.set_id(3);
  job.set_state(Job::SUCCEEDED);
  job.set_runs(2);
  job.set_disk_bytes(4096);
  auto* spec = job.mutable_spec();
  spec->set_model("lenet5");
  spec->set_dataset("fashion-mnist");
  spec->set_device("cuda:0");
  spec->set_epochs(3);
  spec->set_batch_size(256);
  spec->set_optimizer("adam");
  job.mutable_create_time()->set_seconds(1000);
  job.mutable_start_time()->set_seconds(1010);
  job.mutable_last_start_time()->set_seconds(1020);
  job.mutable_end_time()->set_seconds(1070);
  auto* result = job.mutable_result();
  result->set_test_accuracy(0.8912);
  result->add_epoch_seconds_no_eval(0.09);
  result->set_total_seconds(60);
  result->set_peak_current_allocated_bytes(1 << 20);
  result->set_peak_driver_allocated_bytes(2 << 20);
  auto* artifact = result->add_artifacts();
  artifact->set_name("best");
  artifact->set_sha256(std::string(64, 'a'));
  return job;
}

// The label of each line ("model", "device", ...), "" for a continuation.
std::vector<std::string> Labels(const std::string& text) {
  std::vector<std::string> labels;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "Job ")) {
      labels.push_back("Job");
    } else if (line.size() > 2 && line[2] != ' ') {
      labels.push_back(std::string(line.substr(2, line.find(' ', 2) - 2)));
    } else {
      labels.push_back("");
    }
  }
  return labels;
}

TEST(JobTextTest, EachSectionOnceInOrder) {
  const std::string text = DescribeJob(FinishedJob());
  EXPECT_EQ(Labels(text), (std::vector<std::string>{"Job", "model", "device", "options", "created",
                                                    "started", "ended", "accuracy", "time", "",
                                                    "memory", "disk", "artifact"}))
      << text;
  EXPECT_NE(text.find("(resumed 1 time, last at"), std::string::npos) << text;
  EXPECT_NE(text.find("test 89.12%"), std::string::npos) << text;
}

TEST(JobTextTest, AProgramShowsItsCommandInsteadOfAModel) {
  Job job = FinishedJob();
  auto* script = job.mutable_spec()->mutable_script();
  script->set_interpreter("python3");
  script->add_args("train.py");
  script->add_args("--epochs");
  script->add_args("3");
  script->add_files();
  const std::string text = DescribeJob(job);
  EXPECT_NE(text.find("  program   python3 train.py --epochs 3 (1 files)\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("  model "), std::string::npos) << text;
}

}  // namespace
}  // namespace traind

namespace traind {
namespace {

// A program's job: its spec leaves epochs, batch size and learning rate to the program, and it
// printed validation accuracies but no test accuracy. `show` says what it printed and nothing
// else: no "epochs 0, batch 0, lr 0", no "test 0.00%".
TEST(JobTextTest, AProgramsJobShowsOnlyWhatItPrinted) {
  trainer::v1::Job job;
  job.set_id(9);
  job.set_state(trainer::v1::Job::SUCCEEDED);
  job.mutable_spec()->mutable_script()->add_args("train.py");
  job.mutable_spec()->set_device("cpu");
  job.mutable_result()->set_best_validation_accuracy(0.7835);
  job.mutable_result()->set_best_epoch(2);
  const std::string text = DescribeJob(job);
  EXPECT_TRUE(absl::StrContains(text, "  accuracy  best validation 78.35% (epoch 2)\n")) << text;
  for (const char* absent : {"test 0.00%", "epochs 0", "batch 0", "lr 0", "options"}) {
    EXPECT_FALSE(absl::StrContains(text, absent)) << absent << " in\n" << text;
  }
  // In `list`: no epoch count of 0 (the program's own) and no test accuracy of 0.00%.
  const std::string table = JobTable({job});
  const std::vector<std::string> row =
      absl::StrSplit(std::string(absl::StripSuffix(table.substr(table.find('\n') + 1), "\n")), ' ',
                     absl::SkipEmpty());
  ASSERT_GE(row.size(), 8u) << table;
  EXPECT_EQ(row[4], "cpu") << table;
  EXPECT_EQ(row[5], "-") << table;  // EPOCHS: none it reported
  EXPECT_EQ(row[6], "-") << table;  // CREATED, unset here
  EXPECT_EQ(row[7], "-") << table;  // TIME: it never started
  EXPECT_EQ(row[8], "-") << table;  // TEST ACC

  job.mutable_result()->set_test_accuracy(0.8225);
  EXPECT_TRUE(absl::StrContains(DescribeJob(job),
                                "  accuracy  test 82.25%, best validation 78.35% (epoch 2)\n"));
  EXPECT_TRUE(absl::StrContains(JobTable({job}), " 82.25% ")) << JobTable({job});
}

TEST(JobTableTest, ATrialPausedAtItsRungShowsTheTimeItTrainedNotAClockSinceItsStart) {
  Job job;
  job.set_id(4);
  job.set_state(Job::PAUSED);
  job.mutable_spec()->set_model("lenet5");
  job.mutable_start_time()->set_seconds(1000);  // long ago: a clock since would say hours
  job.mutable_result()->add_epoch_seconds_no_eval(20);
  job.mutable_result()->add_epoch_seconds_no_eval(22);
  EXPECT_TRUE(absl::StrContains(JobTable({job}), " 42s ")) << JobTable({job});
}

}  // namespace
}  // namespace traind

namespace traind {
namespace {

// `list` shows how far a running job got and how long it has run.
TEST(JobTextTest, ListShowsARunningJobsProgressAndTime) {
  trainer::v1::Job job;
  job.set_id(4);
  job.set_state(trainer::v1::Job::RUNNING);
  job.mutable_spec()->set_model("mlp");
  job.mutable_spec()->set_epochs(5);
  job.mutable_latest_step()->set_epoch(2);
  job.mutable_latest_step()->set_epochs(5);
  job.mutable_start_time()->set_seconds(absl::ToUnixSeconds(absl::Now()) - 125);
  const std::string table = JobTable({job});
  const std::string row = table.substr(table.find('\n') + 1);
  EXPECT_TRUE(absl::StrContains(row, " 2/5 ")) << table;
  EXPECT_TRUE(absl::StrContains(row, " 2m0")) << table;  // 2m05s, or a second or two more
}

}  // namespace
}  // namespace traind
