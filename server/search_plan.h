// SearchPlan: what a search (SweepSpec.search) means, as pure functions the admission and the
// search driver share: the check at submit (every error names the field and what is allowed),
// the space its trials are drawn from (its params, and its grid axes as choices), its ASHA ladder
// (without early stopping, one rung: the full run), how a trial's draw becomes its job's spec and
// is kept in the store, and the metric compared.
#ifndef TRAIND_SERVER_SEARCH_PLAN_H_
#define TRAIND_SERVER_SEARCH_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "search/asha.h"
#include "search/search_space.h"
#include "search/tpe_searcher.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// Trials a search may have in all.
inline constexpr int kMaxSearchTrials = 100000;
// The most device-hours a budget may name (11 years): past it, a typo.
inline constexpr double kMaxDeviceHours = 1e5;

struct SearchPlan {
  SearchSpace space;
  AshaConfig asha;     // max_trials = SearchSpec.trials
  bool tpe = false;    // else random
  std::string metric;  // "validation_accuracy" or "validation_loss"
  uint64_t seed = 0;
};

// INVALID_ARGUMENT naming the field for a search that cannot run: an unknown method or metric,
// trials out of 1..kMaxSearchTrials, a budget (device_hours) not a number from 0 (none) to
// kMaxDeviceHours, a distribution that cannot be drawn from, a field that
// cannot take the values drawn (its type or range) or cannot vary (epochs under early stopping,
// the job's name), explicit configs or repeat beside a search, an ASHA ladder that does not fit
// the epochs.
absl::StatusOr<SearchPlan> PlanSearch(const trainer::v1::SweepSpec& spec);

// The values a distribution's draws lie between: its bounds, or each choice.
std::vector<std::string> DistributionExtremes(const Distribution& distribution);

// A trial's draw as its job's spec: the sweep's base with each drawn value set.
absl::StatusOr<trainer::v1::JobSpec> TrialSpec(const trainer::v1::SweepSpec& spec,
                                               const ParamValues& params);
// A draw as the store keeps it ("field=value" lines), and back.
std::string ParamsText(const ParamValues& params);
ParamValues ParseParamsText(const std::string& text);

// Whether a higher value of `metric` is better.
bool MetricMaximized(const std::string& metric);
// `epoch`'s value of `metric` from a job's events; nullopt when no evaluated epoch summary of
// that epoch is among them.
std::optional<double> MetricAtEpoch(const std::vector<trainer::v1::JobEvent>& events,
                                    const std::string& metric, int epoch);

// What TPE learns from: each trial with a result, ranked by how far it got (its highest rung),
// then by its metric there (as Optuna ranks pruned trials).
std::vector<Observation> Observations(const SearchPlan& plan, const AshaState& state,
                                      const std::vector<ParamValues>& params);
// Trial `trial`'s draw: random, or TPE from `observations`.
absl::StatusOr<ParamValues> ProposeTrial(const SearchPlan& plan, int64_t trial,
                                         const std::vector<Observation>& observations);

}  // namespace traind

#endif  // TRAIND_SERVER_SEARCH_PLAN_H_
