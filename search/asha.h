// Asynchronous successive halving (ASHA: Li et al., "A System for Massively Parallel
// Hyperparameter Tuning", MLSys 2020) with pause and resume, as pure decisions on a state that the
// caller stores, reloads and changes only through the functions below.
//
// The rung ladder: r, r*eta, r*eta^2, ... while below R, then R itself (r=1, R=30, eta=3: 1, 3, 9,
// 27, 30). The last rung is always R, so every trial that survives every cut trains in full; the
// step into it may be short (27 -> 30), which costs little and keeps "full training" meaning R.
// Hyperband brackets: bracket b's trials start at rung b (r*eta^b epochs) and are ranked only
// against trials of their bracket; new trials go to brackets in turn (trial k to k mod brackets).
//
// A trial trains until its next rung's epochs (NextStopEpochs), reports its metric there
// (RecordResult) and pauses; its checkpoint is the caller's to keep. NextAction is ASHA's get_job:
// from the top rung down, a paused trial in the top floor(n/eta) of its rung's n results is
// promoted (it resumes from its checkpoint to the next rung); else a new trial starts while the
// budget lasts; else the caller waits for running trials, or, with nothing running, is done: the
// paused trials left are final. Ties rank the older trial first. A failed trial keeps the results
// it reported (they were real and count in their rungs' n) but is never promoted again.
//
// Pure functions of their arguments; the state is a plain value the caller owns and guards.
#ifndef TRAIND_SEARCH_ASHA_H_
#define TRAIND_SEARCH_ASHA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace traind {

struct AshaConfig {
  int64_t min_resource = 1;      // r: epochs at bracket 0's first rung (>= 1)
  int64_t max_resource = 0;      // R: a trial's full epochs, the last rung (>= r; required)
  int64_t reduction_factor = 3;  // eta: each rung promotes its top 1/eta (2 .. 1000)
  int brackets = 1;              // Hyperband brackets (1 .. the number of rungs)
  int64_t max_trials = 0;        // how many trials to start in all (>= 0)
  bool maximize = true;          // whether a higher metric is better
};

// INVALID_ARGUMENT naming the field that is out of range.
absl::Status ValidateAshaConfig(const AshaConfig& config);

// The epochs of each rung (the header's ladder). `config` must be valid.
std::vector<int64_t> AshaRungs(const AshaConfig& config);

enum class AshaTrialStatus {
  kRunning,  // training towards its next rung
  kPaused,   // reported at a rung below the last; may be promoted
  kEnded,    // reported at the last rung: trained in full
  kFailed,   // stopped without a result at the rung it was training for
};

struct AshaTrial {
  int bracket = 0;
  AshaTrialStatus status = AshaTrialStatus::kRunning;
  // Its metric at each rung reached, from its bracket's first: metrics[i] is rung bracket + i.
  std::vector<double> metrics;
};

// The highest rung `trial` reported at; -1 before its first.
int HighestRung(const AshaTrial& trial);

struct AshaState {
  std::vector<AshaTrial> trials;  // trial k is trials[k], in the order they started
};

// The epochs `trial` trains to before it is evaluated next: its next rung's (R once at the last).
int64_t NextStopEpochs(const AshaConfig& config, const AshaTrial& trial);

struct AshaAction {
  enum class Kind {
    kPromote,   // resume `trial` from its checkpoint and train it to `epochs`
    kStartNew,  // start trial `trial` (the next index) in `bracket`, trained to `epochs`
    kWait,      // nothing to do until a running trial reports, or a new trial may start
    kDone,      // nothing runs and nothing can move: the search is over
  };
  Kind kind = Kind::kWait;
  int64_t trial = -1;  // kPromote, kStartNew
  int bracket = 0;     // kPromote, kStartNew
  int rung = 0;        // kPromote, kStartNew: the rung it trains to (an index of AshaRungs)
  int64_t epochs = 0;  // kPromote, kStartNew: that rung's epochs
};

// ASHA's decision (see the header). `can_start_new_trial`: whether the caller may start a trial
// now (false: only promotions, else kWait). INVALID_ARGUMENT for an invalid config, or a state
// that does not fit it (AshaStateError).
absl::StatusOr<AshaAction> NextAction(const AshaConfig& config, const AshaState& state,
                                      bool can_start_new_trial);

// The state transitions. Each checks that it applies (NOT_FOUND: no such trial;
// FAILED_PRECONDITION: not in a status that allows it) and leaves `state` unchanged if not.
// Applies a kPromote or kStartNew from NextAction (kWait and kDone change nothing).
absl::Status ApplyAction(const AshaConfig& config, const AshaAction& action, AshaState* state);
// A running trial's metric at the rung it was training for: paused, or ended at the last rung.
absl::Status RecordResult(const AshaConfig& config, int64_t trial, double metric, AshaState* state);
// A running or paused trial that can go no further. Failing a failed trial again is OK.
absl::Status RecordFailure(int64_t trial, AshaState* state);

// Why `state` cannot be a state of `config` (a bracket out of range, more results than rungs, a
// status its results contradict), or OK.
absl::Status AshaStateError(const AshaConfig& config, const AshaState& state);

// Epochs trained by all trials so far (each trial's highest rung, as it resumes from checkpoints:
// a lower bound while trials run) against what training every started trial in full would take.
struct AshaCompute {
  int64_t epochs_spent = 0;
  int64_t epochs_full = 0;
};
AshaCompute ComputeSpent(const AshaConfig& config, const AshaState& state);

// A line-based text form of the state, for the caller to store:
//   asha-state 1
//   trial BRACKET running|paused|ended|failed [METRIC ...]
// one trial line per trial, in order; metrics read back as the same doubles.
std::string SerializeAshaState(const AshaState& state);
// DATA_LOSS naming the line for text that SerializeAshaState could not have written.
absl::StatusOr<AshaState> ParseAshaState(absl::string_view text);

}  // namespace traind

#endif  // TRAIND_SEARCH_ASHA_H_
