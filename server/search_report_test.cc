// A search's report: what each trial got to, its best, the compute, and its bound on trials.
#include "server/search_report.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "search/asha.h"

namespace traind {
namespace {

// A random search of `trials` trials over learning_rate, each paused at its first rung (of 1, 3)
// with metric (k % 1000) / 1000, trial `best` at 0.99 and ended at the last rung.
Store::SearchRecord Record(int trials, int best) {
  Store::SearchRecord record;
  record.sweep_id = 4;
  record.spec.mutable_base()->set_model("lenet5");
  record.spec.mutable_base()->set_epochs(3);
  trainer::v1::SearchSpec* search = record.spec.mutable_search();
  search->set_method("random");
  search->set_trials(trials);
  search->set_early_stop("asha");
  trainer::v1::SearchParam* param = search->add_params();
  param->set_field("learning_rate");
  param->set_distribution("loguniform:1e-4:1e-1");
  AshaState state;
  for (int k = 0; k < trials; ++k) {
    AshaTrial trial;
    trial.status = k == best ? AshaTrialStatus::kEnded : AshaTrialStatus::kPaused;
    trial.metrics = {(k % 1000) / 1000.0};
    if (k == best) trial.metrics.push_back(0.99);
    state.trials.push_back(trial);
    record.trials.push_back({k, 100 + k, absl::StrCat("learning_rate=0.00", k % 9 + 1, "\n")});
  }
  record.state = SerializeAshaState(state);
  return record;
}

TEST(SearchReportTest, SaysHowFarEachTrialGotItsBestAndTheComputeSpent) {
  std::map<int64_t, trainer::v1::Job> jobs;
  jobs[101].mutable_result()->add_epoch_seconds_no_eval(1.5);
  jobs[101].mutable_result()->add_epoch_seconds_no_eval(2.0);
  absl::StatusOr<trainer::v1::SearchReport> report = BuildSearchReport(Record(3, 1), jobs);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->trials_size(), 3);
  EXPECT_EQ(report->best_trial(), 1);
  EXPECT_EQ(report->trials(1).rung(), 1);
  EXPECT_EQ(report->trials(1).epochs(), 3);
  EXPECT_EQ(report->trials(1).status(), "ended");
  EXPECT_EQ(report->trials(1).device_seconds(), 3.5);
  EXPECT_EQ(report->trials(0).status(), "paused");
  EXPECT_EQ(report->trials(0).params().at("learning_rate"), "0.001");
  EXPECT_EQ(report->epochs_spent(), 1 + 3 + 1);
  EXPECT_EQ(report->epochs_full(), 9);
  EXPECT_EQ(report->trials_not_shown(), 0);
}

TEST(SearchReportTest, AHugeSearchListsItsFurthestAndBestTrialsOnly) {
  absl::StatusOr<trainer::v1::SearchReport> report = BuildSearchReport(Record(5000, 4321), {});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->trials_size(), 2000);
  EXPECT_EQ(report->trials_not_shown(), 3000);
  EXPECT_LT(report->ByteSizeLong(), 3u << 20);
  EXPECT_EQ(report->best_trial(), 4321);
  bool best_listed = false;
  for (int i = 0; i < report->trials_size(); ++i) {
    if (i > 0) EXPECT_LT(report->trials(i - 1).trial(), report->trials(i).trial());
    best_listed |= report->trials(i).trial() == 4321;
    // The others listed are the best at the first rung: metric 0.999 down to 0.5.
    if (report->trials(i).trial() != 4321) EXPECT_GE(report->trials(i).metric(), 0.5);
  }
  EXPECT_TRUE(best_listed);
}

}  // namespace
}  // namespace traind
