#include "server/search_plan.h"

#include <cmath>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/spec_fields.h"
#include "common/spec_ranges.h"
#include "common/status_macros.h"
#include "search/random_searcher.h"
#include "server/trial_packing.h"

namespace traind {

using trainer::v1::JobSpec;

namespace {

// What a search may not draw: its trials' own epochs are ASHA's resource, and a member's name is
// the sweep's to give.
absl::Status CheckMayVary(const std::string& field, bool early_stop) {
  const std::string canonical = CanonicalSpecField(field);
  if (canonical == "name") {
    return absl::InvalidArgumentError(absl::StrCat(
        "search.params: ", field, " cannot vary (a search's members are named by the sweep)"));
  }
  if (canonical == "epochs" && early_stop) {
    return absl::InvalidArgumentError(
        "search.params: epochs cannot vary under early stopping: it is what the rungs divide "
        "(--epochs N trains a promoted trial to N; --min-epochs sets the first rung)");
  }
  return absl::OkStatus();
}

// Each value a distribution's draws lie between must be one the field takes, within its range,
// so that no trial fails at submit's rules.
absl::Status CheckFieldTakes(const JobSpec& base, const std::string& field,
                             const Distribution& distribution) {
  for (const std::string& value : DistributionExtremes(distribution)) {
    JobSpec probe = base;
    if (absl::Status set = SetSpecField(&probe, field, value); !set.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("search.params: ", field, " cannot take ",
                                                     DistributionText(distribution), ": ",
                                                     set.message()));
    }
    if (absl::Status range = CheckSpecRanges(probe); !range.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "search.params: ", field, " ", DistributionText(distribution), ": ", range.message()));
    }
  }
  return absl::OkStatus();
}

// The search's params, then its grid axes as choices.
absl::StatusOr<SearchSpace> SpaceOf(const trainer::v1::SweepSpec& spec) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (const trainer::v1::SearchParam& param : spec.search().params()) {
    fields.emplace_back(param.field(), param.distribution());
  }
  for (const trainer::v1::SweepAxis& axis : spec.axes()) {
    fields.emplace_back(axis.field(), absl::StrCat("choice:", absl::StrJoin(axis.values(), ",")));
  }
  absl::StatusOr<SearchSpace> space = ParseSearchSpace(fields);
  if (!space.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("search.params: ", space.status().message()));
  }
  if (space->params.empty()) {
    return absl::InvalidArgumentError(
        "search.params: nothing to search over (give a field a distribution, e.g. --lr "
        "loguniform:1e-4:1e-1, or a list of values)");
  }
  return space;
}

absl::StatusOr<AshaConfig> LadderOf(const trainer::v1::SearchSpec& search, int epochs) {
  AshaConfig asha;
  asha.max_resource = std::max(1, epochs);
  asha.max_trials = search.trials();
  asha.maximize =
      MetricMaximized(search.metric().empty() ? "validation_accuracy" : search.metric());
  if (search.early_stop().empty()) {
    asha.min_resource = asha.max_resource;  // one rung: the full run
    return asha;
  }
  if (search.early_stop() != "asha") {
    return absl::InvalidArgumentError(absl::StrCat("search.early_stop: '", search.early_stop(),
                                                   "' is not one; use asha (or none)"));
  }
  asha.min_resource = search.min_epochs() == 0 ? 1 : search.min_epochs();
  asha.reduction_factor = search.reduction_factor() == 0 ? 3 : search.reduction_factor();
  asha.brackets = search.brackets() == 0 ? 1 : search.brackets();
  if (asha.min_resource < 1 || asha.min_resource > asha.max_resource) {
    return absl::InvalidArgumentError(absl::StrCat("search.min_epochs: must be 1 to the epochs (",
                                                   asha.max_resource, "), got ",
                                                   search.min_epochs()));
  }
  if (absl::Status valid = ValidateAshaConfig(asha); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("search: ", valid.message()));
  }
  return asha;
}

}  // namespace

std::vector<std::string> DistributionExtremes(const Distribution& distribution) {
  if (distribution.kind == Distribution::Kind::kChoice) return distribution.choices;
  if (IsIntegerKind(distribution.kind)) {
    return {absl::StrCat(static_cast<int64_t>(distribution.low)),
            absl::StrCat(static_cast<int64_t>(distribution.high))};
  }
  return {FormatReal(distribution.low), FormatReal(distribution.high)};
}

bool MetricMaximized(const std::string& metric) { return metric != "validation_loss"; }

absl::StatusOr<SearchPlan> PlanSearch(const trainer::v1::SweepSpec& spec) {
  const trainer::v1::SearchSpec& search = spec.search();
  SearchPlan plan;
  if (search.method() != "random" && search.method() != "tpe") {
    return absl::InvalidArgumentError(
        absl::StrCat("search.method: '", search.method(), "' is not one; use random or tpe"));
  }
  plan.tpe = search.method() == "tpe";
  if (search.trials() < 1 || search.trials() > kMaxSearchTrials) {
    return absl::InvalidArgumentError(
        absl::StrCat("search.trials: must be 1 to ", kMaxSearchTrials, ", got ", search.trials()));
  }
  plan.metric = search.metric().empty() ? "validation_accuracy" : search.metric();
  if (plan.metric != "validation_accuracy" && plan.metric != "validation_loss") {
    return absl::InvalidArgumentError(
        absl::StrCat("search.metric: '", plan.metric,
                     "' is not one a trial reports; use validation_accuracy or validation_loss"));
  }
  if (!spec.configs().empty() || spec.repeat() > 1) {
    return absl::InvalidArgumentError(
        "search: not with explicit configs or repeat (a search draws each member; a value to "
        "try is a choice: --batch-size choice:64,128)");
  }
  if (search.parallel() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "search.parallel: must be 0 (the lane's slots) or more, got ", search.parallel()));
  }
  if (!(search.device_hours() >= 0 && search.device_hours() <= kMaxDeviceHours)) {  // NaN too
    return absl::InvalidArgumentError(absl::StrCat("search.device_hours: 0 (no budget) to ",
                                                   kMaxDeviceHours, "; got ",
                                                   search.device_hours()));
  }
  if (search.max_pack() < 0 || search.max_pack() > kMaxPack) {
    return absl::InvalidArgumentError(
        absl::StrCat("search.max_pack: trials at once on one GPU or the CPU, 0 (as measured) to ",
                     kMaxPack, "; got ", search.max_pack()));
  }
  ASSIGN_OR_RETURN(plan.space, SpaceOf(spec));
  for (const auto& [field, distribution] : plan.space.params) {
    RETURN_IF_ERROR(CheckMayVary(field, !search.early_stop().empty()));
    RETURN_IF_ERROR(CheckFieldTakes(spec.base(), field, distribution));
  }
  if (!search.early_stop().empty() && spec.base().has_script() && spec.base().epochs() <= 0) {
    // traind cannot read a program's epoch count from its arguments: the ladder needs it.
    return absl::InvalidArgumentError(
        "epochs: a program's search with early stopping needs the epochs the program trains "
        "(--epochs N beside its own flag: -- python3 train.py --epochs N), for the rungs");
  }
  ASSIGN_OR_RETURN(plan.asha, LadderOf(search, spec.base().epochs()));
  plan.seed = static_cast<uint64_t>(search.seed());
  return plan;
}

absl::StatusOr<JobSpec> TrialSpec(const trainer::v1::SweepSpec& spec, const ParamValues& params) {
  JobSpec trial = spec.base();
  for (const auto& [field, value] : params) RETURN_IF_ERROR(SetSpecField(&trial, field, value));
  return trial;
}

std::string ParamsText(const ParamValues& params) {
  std::string text;
  for (const auto& [field, value] : params) absl::StrAppend(&text, field, "=", value, "\n");
  return text;
}

ParamValues ParseParamsText(const std::string& text) {
  ParamValues params;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const size_t equals = line.find('=');
    if (equals == absl::string_view::npos) continue;
    params[std::string(line.substr(0, equals))] = std::string(line.substr(equals + 1));
  }
  return params;
}

std::optional<double> MetricAtEpoch(const std::vector<trainer::v1::JobEvent>& events,
                                    const std::string& metric, int epoch) {
  std::optional<double> value;  // the last of that epoch (a resumed run may repeat it)
  for (const trainer::v1::JobEvent& event : events) {
    if (!event.has_epoch_summary()) continue;
    const trainer::v1::EpochSummary& summary = event.epoch_summary();
    if (summary.epoch() != epoch || !summary.evaluated()) continue;
    value = metric == "validation_loss" ? summary.validation_loss() : summary.validation_accuracy();
  }
  return value;
}

std::vector<Observation> Observations(const SearchPlan& plan, const AshaState& state,
                                      const std::vector<ParamValues>& params) {
  std::vector<Observation> observations;
  for (size_t k = 0; k < state.trials.size() && k < params.size(); ++k) {
    const AshaTrial& trial = state.trials[k];
    if (trial.metrics.empty() || !std::isfinite(trial.metrics.back())) continue;
    // Further is better, whatever the metric; within a rung, the metric (mapped into (0, 1) so
    // that it never reaches the next rung's values).
    const double metric = plan.asha.maximize ? trial.metrics.back() : -trial.metrics.back();
    const double value = HighestRung(trial) + 0.5 + std::atan(metric) / M_PI;
    observations.push_back({params[k], value});
  }
  return observations;
}

absl::StatusOr<ParamValues> ProposeTrial(const SearchPlan& plan, int64_t trial,
                                         const std::vector<Observation>& observations) {
  if (!plan.tpe) return ProposeRandom(plan.space, plan.seed, trial);
  TpeOptions options;
  options.maximize = true;  // Observations' values: higher is better
  return ProposeTpe(plan.space, plan.seed, trial, observations, options);
}

}  // namespace traind
