#include "search/asha.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "search/search_space.h"

namespace traind {
namespace {

using Status = AshaTrialStatus;

constexpr int64_t kMaxReductionFactor = 1000;
constexpr int64_t kMaxTrials = 100000;
constexpr absl::string_view kStateHeader = "asha-state 1";

struct StatusName {
  Status status;
  absl::string_view name;
};
constexpr StatusName kStatusNames[] = {{Status::kRunning, "running"},
                                       {Status::kPaused, "paused"},
                                       {Status::kEnded, "ended"},
                                       {Status::kFailed, "failed"}};

absl::string_view NameOf(Status status) {
  for (const StatusName& s : kStatusNames) {
    if (s.status == status) return s.name;
  }
  return "?";
}

// The trial that leaves `rung` of `bracket` next, or -1: the best-ranked paused trial at that
// rung among the top floor(n / eta) of the n results there.
int64_t Promotable(const AshaConfig& config, const AshaState& state, int bracket, int rung) {
  std::vector<int64_t> ranked;  // the trials with a result at `rung`
  for (size_t k = 0; k < state.trials.size(); ++k) {
    const AshaTrial& t = state.trials[k];
    if (t.bracket == bracket && HighestRung(t) >= rung) ranked.push_back(k);
  }
  const size_t top = ranked.size() / static_cast<size_t>(config.reduction_factor);
  if (top == 0) return -1;
  const auto key = [&](int64_t k) {
    const double m = state.trials[k].metrics[rung - bracket];
    if (std::isnan(m)) return HUGE_VAL;  // a NaN result ranks last
    return config.maximize ? -m : m;
  };
  // Only the order of the top `top` matters; equal keys rank the older trial first.
  std::partial_sort(ranked.begin(), ranked.begin() + top, ranked.end(), [&](int64_t a, int64_t b) {
    const double ka = key(a), kb = key(b);
    return ka != kb ? ka < kb : a < b;
  });
  for (size_t i = 0; i < top; ++i) {
    const AshaTrial& t = state.trials[ranked[i]];
    if (t.status == Status::kPaused && HighestRung(t) == rung) return ranked[i];
  }
  return -1;
}

absl::Status CheckTrial(const AshaState& state, int64_t trial) {
  if (trial < 0 || trial >= static_cast<int64_t>(state.trials.size())) {
    return absl::NotFoundError(
        absl::StrCat("asha: no trial ", trial, " (", state.trials.size(), " started)"));
  }
  return absl::OkStatus();
}

absl::Status NotNow(int64_t trial, const AshaTrial& t, absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat("asha: trial ", trial, " is ", NameOf(t.status),
                                                    " at rung ", HighestRung(t), ": cannot ",
                                                    what));
}

absl::Status ApplyPromote(const AshaConfig& config, const AshaAction& action, AshaState* state) {
  if (absl::Status s = CheckTrial(*state, action.trial); !s.ok()) return s;
  AshaTrial& t = state->trials[action.trial];
  const int last = static_cast<int>(AshaRungs(config).size()) - 1;
  if (t.status != Status::kPaused || HighestRung(t) + 1 != action.rung || action.rung > last) {
    return NotNow(action.trial, t, absl::StrCat("be promoted to rung ", action.rung));
  }
  t.status = Status::kRunning;
  return absl::OkStatus();
}

absl::Status ApplyStart(const AshaConfig& config, const AshaAction& action, AshaState* state) {
  const auto next = static_cast<int64_t>(state->trials.size());
  if (next >= config.max_trials) {
    return absl::FailedPreconditionError(
        absl::StrCat("asha: all ", config.max_trials, " trials have started"));
  }
  if (action.trial != next || action.bracket < 0 || action.bracket >= config.brackets ||
      action.rung != action.bracket) {
    return absl::FailedPreconditionError(
        absl::StrCat("asha: the next trial is ", next, " at its bracket's first rung, not trial ",
                     action.trial, " in bracket ", action.bracket, " at rung ", action.rung));
  }
  state->trials.push_back({action.bracket, Status::kRunning, {}});
  return absl::OkStatus();
}

absl::Status ParseTrialLine(absl::string_view line, AshaTrial* trial) {
  const std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (words.size() < 3 || words[0] != "trial") {
    return absl::DataLossError("expected 'trial BRACKET STATUS [METRIC ...]'");
  }
  if (!absl::SimpleAtoi(words[1], &trial->bracket) || trial->bracket < 0) {
    return absl::DataLossError(absl::StrCat("'", words[1], "' is not a bracket"));
  }
  const auto it = std::find_if(std::begin(kStatusNames), std::end(kStatusNames),
                               [&](const StatusName& s) { return s.name == words[2]; });
  if (it == std::end(kStatusNames)) {
    return absl::DataLossError(absl::StrCat("'", words[2], "' is not a status"));
  }
  trial->status = it->status;
  for (size_t i = 3; i < words.size(); ++i) {
    double metric;
    if (!absl::SimpleAtod(words[i], &metric)) {
      return absl::DataLossError(absl::StrCat("'", words[i], "' is not a metric"));
    }
    trial->metrics.push_back(metric);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateAshaConfig(const AshaConfig& c) {
  const auto bad = [](absl::string_view what, int64_t got) {
    return absl::InvalidArgumentError(absl::StrCat("asha: ", what, ", got ", got));
  };
  if (c.min_resource < 1) return bad("min_resource must be 1 or more", c.min_resource);
  if (c.max_resource < c.min_resource) {
    return bad(absl::StrCat("max_resource must be at least min_resource (", c.min_resource, ")"),
               c.max_resource);
  }
  if (c.reduction_factor < 2 || c.reduction_factor > kMaxReductionFactor) {
    return bad(absl::StrCat("reduction_factor must be 2 to ", kMaxReductionFactor),
               c.reduction_factor);
  }
  if (c.max_trials < 0 || c.max_trials > kMaxTrials) {
    return bad(absl::StrCat("max_trials must be 0 to ", kMaxTrials), c.max_trials);
  }
  const auto rungs = static_cast<int64_t>(AshaRungs(c).size());
  if (c.brackets < 1 || c.brackets > rungs) {
    return bad(absl::StrCat("brackets must be 1 to the number of rungs (", rungs, ")"), c.brackets);
  }
  return absl::OkStatus();
}

std::vector<int64_t> AshaRungs(const AshaConfig& config) {
  std::vector<int64_t> rungs;
  for (int64_t r = config.min_resource; r < config.max_resource; r *= config.reduction_factor) {
    rungs.push_back(r);
    if (r > config.max_resource / config.reduction_factor) break;  // r * eta >= R, or overflow
  }
  rungs.push_back(config.max_resource);
  return rungs;
}

int HighestRung(const AshaTrial& trial) {
  return trial.bracket + static_cast<int>(trial.metrics.size()) - 1;
}

int64_t NextStopEpochs(const AshaConfig& config, const AshaTrial& trial) {
  const std::vector<int64_t> rungs = AshaRungs(config);
  const int next = std::max(HighestRung(trial) + 1, trial.bracket);
  return rungs[std::clamp<int>(next, 0, static_cast<int>(rungs.size()) - 1)];
}

absl::Status AshaStateError(const AshaConfig& config, const AshaState& state) {
  const int last = static_cast<int>(AshaRungs(config).size()) - 1;
  for (size_t k = 0; k < state.trials.size(); ++k) {
    const AshaTrial& t = state.trials[k];
    const int rung = HighestRung(t);
    const bool fits = t.bracket >= 0 && t.bracket < config.brackets && rung <= last &&
                      (t.status == Status::kEnded) == (rung == last) &&
                      (t.status != Status::kPaused || rung >= t.bracket);
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat(
          "asha: trial ", k, " (bracket ", t.bracket, ", ", NameOf(t.status), " at rung ", rung,
          ") does not fit ", config.brackets, " bracket(s) of rungs 0 to ", last));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<AshaAction> NextAction(const AshaConfig& config, const AshaState& state,
                                      bool can_start_new_trial) {
  if (absl::Status s = ValidateAshaConfig(config); !s.ok()) return s;
  if (absl::Status s = AshaStateError(config, state); !s.ok()) return s;
  const std::vector<int64_t> rungs = AshaRungs(config);
  AshaAction action;
  for (int rung = static_cast<int>(rungs.size()) - 2; rung >= 0; --rung) {
    for (int b = 0; b < config.brackets && b <= rung; ++b) {
      const int64_t trial = Promotable(config, state, b, rung);
      if (trial < 0) continue;
      action = {AshaAction::Kind::kPromote, trial, b, rung + 1, rungs[rung + 1]};
      return action;
    }
  }
  const auto started = static_cast<int64_t>(state.trials.size());
  if (started < config.max_trials) {
    if (!can_start_new_trial) return action;  // kWait
    const int bracket = static_cast<int>(started % config.brackets);
    action = {AshaAction::Kind::kStartNew, started, bracket, bracket, rungs[bracket]};
    return action;
  }
  const bool running = std::any_of(state.trials.begin(), state.trials.end(),
                                   [](const AshaTrial& t) { return t.status == Status::kRunning; });
  action.kind = running ? AshaAction::Kind::kWait : AshaAction::Kind::kDone;
  return action;
}

absl::Status ApplyAction(const AshaConfig& config, const AshaAction& action, AshaState* state) {
  switch (action.kind) {
    case AshaAction::Kind::kPromote:
      return ApplyPromote(config, action, state);
    case AshaAction::Kind::kStartNew:
      return ApplyStart(config, action, state);
    case AshaAction::Kind::kWait:
    case AshaAction::Kind::kDone:
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("asha: unknown action");
}

absl::Status RecordResult(const AshaConfig& config, int64_t trial, double metric,
                          AshaState* state) {
  if (absl::Status s = CheckTrial(*state, trial); !s.ok()) return s;
  AshaTrial& t = state->trials[trial];
  const int last = static_cast<int>(AshaRungs(config).size()) - 1;
  if (t.status != Status::kRunning || HighestRung(t) >= last) {
    return NotNow(trial, t, "report a result");
  }
  t.metrics.push_back(metric);
  t.status = HighestRung(t) == last ? Status::kEnded : Status::kPaused;
  return absl::OkStatus();
}

absl::Status RecordFailure(int64_t trial, AshaState* state) {
  if (absl::Status s = CheckTrial(*state, trial); !s.ok()) return s;
  AshaTrial& t = state->trials[trial];
  if (t.status == Status::kEnded) return NotNow(trial, t, "fail");
  t.status = Status::kFailed;
  return absl::OkStatus();
}

AshaCompute ComputeSpent(const AshaConfig& config, const AshaState& state) {
  const std::vector<int64_t> rungs = AshaRungs(config);
  AshaCompute compute;
  for (const AshaTrial& t : state.trials) {
    const int rung = std::min(HighestRung(t), static_cast<int>(rungs.size()) - 1);
    if (rung >= 0) compute.epochs_spent += rungs[rung];
  }
  compute.epochs_full = static_cast<int64_t>(state.trials.size()) * config.max_resource;
  return compute;
}

std::string SerializeAshaState(const AshaState& state) {
  std::string out = absl::StrCat(kStateHeader, "\n");
  for (const AshaTrial& t : state.trials) {
    absl::StrAppend(&out, "trial ", t.bracket, " ", NameOf(t.status));
    for (double m : t.metrics) absl::StrAppend(&out, " ", FormatReal(m));
    out += '\n';
  }
  return out;
}

absl::StatusOr<AshaState> ParseAshaState(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty() || lines[0] != kStateHeader) {
    return absl::DataLossError(absl::StrCat("asha state line 1: expected '", kStateHeader, "'"));
  }
  AshaState state;
  for (size_t i = 1; i < lines.size(); ++i) {
    AshaTrial trial;
    if (absl::Status s = ParseTrialLine(lines[i], &trial); !s.ok()) {
      return absl::DataLossError(absl::StrCat("asha state line ", i + 1, ": ", s.message()));
    }
    state.trials.push_back(std::move(trial));
  }
  return state;
}

}  // namespace traind
