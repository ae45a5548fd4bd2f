#include "server/search_report.h"

#include <cmath>
#include <limits>

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
  report.set_trials_planned(record.spec.search().trials());
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
        double seconds = 0;
        for (double epoch : job->second.result().epoch_seconds_no_eval()) seconds += epoch;
        row->set_device_seconds(seconds);
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
    if (rung < 0 || !std::isfinite(row->metric())) continue;
    if (report.best_trial() < 0 ||
        Better(*row, report.trials(report.best_trial()), plan.asha.maximize)) {
      report.set_best_trial(static_cast<int32_t>(k));
    }
  }
  const AshaCompute compute = ComputeSpent(plan.asha, state);
  report.set_epochs_spent(compute.epochs_spent);
  report.set_epochs_full(compute.epochs_full);
  return report;
}

}  // namespace traind
