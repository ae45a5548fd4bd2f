#include "server/search_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/job_result.h"
#include "common/status_macros.h"
#include "search/asha.h"
#include "server/search_plan.h"

namespace traind {

namespace {

const char* StatusName(AshaTrialStatus status) {
  switch (status) {
    case AshaTrialStatus::kRunning:
      return "running";
    case AshaTrialStatus::kPaused:
      return "paused";
    case AshaTrialStatus::kEnded:
      return "ended";
    case AshaTrialStatus::kFailed:
      return "failed";
  }
  return "";
}

// Better: further (a higher rung), then a better metric there.
bool Better(const trainer::v1::SearchTrial& a, const trainer::v1::SearchTrial& b, bool maximize) {
  if (a.rung() != b.rung()) return a.rung() > b.rung();
  return maximize ? a.metric() > b.metric() : a.metric() < b.metric();
}

// Trials a report lists at most: 100,000 trials of a few fields each would pass the 3 MiB every
// reply stays under.
constexpr int kMaxReportTrials = 2000;

// The `limit` furthest and best trials, in trial order, when there are more.
void KeepTheBest(int limit, bool maximize, trainer::v1::SearchReport* report) {
  auto* trials = report->mutable_trials();
  if (trials->size() <= limit) return;
  std::vector<trainer::v1::SearchTrial> all(trials->begin(), trials->end());
  const auto reported = [](const trainer::v1::SearchTrial& t) {
    return t.rung() >= 0 && std::isfinite(t.metric());
  };
  std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) {
    if (reported(a) != reported(b)) return reported(a);
    return reported(a) && Better(a, b, maximize);
  });
  all.resize(limit);
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.trial() < b.trial(); });
  report->set_trials_not_shown(trials->size() - limit);
  trials->Clear();
  for (auto& trial : all) *trials->Add() = std::move(trial);
}

}  // namespace

absl::StatusOr<trainer::v1::SearchReport> BuildSearchReport(
    const Store::SearchRecord& record, const std::map<int64_t, trainer::v1::Job>& jobs) {
  ASSIGN_OR_RETURN(const SearchPlan plan, PlanSearch(record.spec));
  ASSIGN_OR_RETURN(const AshaState state, ParseAshaState(record.state));
  trainer::v1::SearchReport report;
  report.set_method(record.spec.search().method());
  report.set_metric(plan.metric);
  report.set_maximize(plan.asha.maximize);
  report.set_done(record.done);
  report.set_packing(record.pack_why);
  report.set_trials_planned(record.spec.search().trials());
  report.set_device_seconds_budget(record.spec.search().device_hours() * 3600.0);
  const std::vector<int64_t> rungs = AshaRungs(plan.asha);
  for (int64_t epochs : rungs) report.add_rungs(static_cast<int32_t>(epochs));
  report.set_best_trial(-1);
  for (size_t k = 0; k < state.trials.size(); ++k) {
    const AshaTrial& trial = state.trials[k];
    trainer::v1::SearchTrial* row = report.add_trials();
    row->set_trial(static_cast<int32_t>(k));
    if (k < record.trials.size()) {
      row->set_job_id(record.trials[k].job_id);
      if (auto job = jobs.find(record.trials[k].job_id); job != jobs.end()) {
        const double seconds = TrainingSeconds(job->second);
        row->set_device_seconds(seconds);
        report.set_device_seconds(report.device_seconds() + seconds);
      }
      for (const auto& [field, value] : ParseParamsText(record.trials[k].params)) {
        (*row->mutable_params())[field] = value;
      }
    }
    const int rung = HighestRung(trial);
    row->set_rung(rung);
    row->set_epochs(rung >= 0 ? static_cast<int32_t>(rungs[rung]) : 0);
    row->set_metric(trial.metrics.empty() ? std::numeric_limits<double>::quiet_NaN()
                                          : trial.metrics.back());
    row->set_status(StatusName(trial.status));
    const auto job = jobs.find(row->job_id());
    const bool live =
        trial.status == AshaTrialStatus::kRunning || trial.status == AshaTrialStatus::kPaused;
    if (live && job != jobs.end()) {
      // In flight: whether it waits for a lane or trains, as its job says; a search cancelled
      // stops its trials where they were, which its state (not moved since) does not record.
      if (trial.status == AshaTrialStatus::kRunning &&
          job->second.state() == trainer::v1::Job::QUEUED) {
        row->set_status("queued");
      } else if (job->second.state() == trainer::v1::Job::CANCELLED) {
        row->set_status("cancelled");
      }
    }
    // Stopped at its rung, its result counting: a program that cannot pause, or a paused trial
    // the search ended when it was over (its job SUCCEEDED, `show` says why).
    if (job != jobs.end() && job->second.result().has_stopped() && !trial.metrics.empty() &&
        (trial.status == AshaTrialStatus::kFailed ||
         (trial.status == AshaTrialStatus::kPaused &&
          job->second.state() == trainer::v1::Job::SUCCEEDED))) {
      row->set_status("stopped");
    }
    if (rung < 0 || !std::isfinite(row->metric())) continue;
    if (report.best_trial() < 0 ||
        Better(*row, report.trials(report.best_trial()), plan.asha.maximize)) {
      report.set_best_trial(static_cast<int32_t>(k));
    }
  }
  KeepTheBest(kMaxReportTrials, plan.asha.maximize, &report);
  const AshaCompute compute = ComputeSpent(plan.asha, state);
  report.set_epochs_spent(compute.epochs_spent);
  report.set_epochs_full(compute.epochs_full);
  return report;
}

}  // namespace traind
