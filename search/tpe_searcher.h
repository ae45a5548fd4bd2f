// Model-based search: the Tree-structured Parzen Estimator (Bergstra et al., NeurIPS 2011) as
// Optuna 3.1's TPESampler runs it by default, each parameter on its own (univariate):
//  1. With fewer than n_startup_trials observations, the proposal is ProposeRandom's.
//  2. Otherwise, for each parameter, the observations that have a value for it are ranked by
//     value; the best gamma(n) = min(ceil(n / 10), 25) of them are "good", the rest "bad".
//  3. Two Parzen estimators (parzen_estimator.h) are fitted: l(x) on the good values, g(x) on
//     the bad, each observation weighted by recency (TpeWeights).
//  4. n_ei_candidates values are drawn from l(x); the one with the largest log l(x) - log g(x)
//     (the expected improvement's maximiser, under TPE's model) is proposed; the first wins ties.
// Reals are modelled in the space their distribution is uniform in (log for the log kinds);
// integers as reals on [low - 0.5, high + 0.5], scored by the mass of their unit interval.
//
// Deterministic: every draw comes from a stream seeded by (seed, trial index, field name), so a
// daemon restarted after kill -9 that passes the same observations gets the same proposal.
//
// Which observations to pass is the caller's choice, not this file's. Trials stopped early
// (asha.h) have values at different resources, which do not compare: pass each trial's value at
// the highest rung where enough trials have one, or each trial's latest value, consistently.
// Pure functions: any thread may call them.
#ifndef TRAIND_SEARCH_TPE_SEARCHER_H_
#define TRAIND_SEARCH_TPE_SEARCHER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "search/search_space.h"

namespace traind {

// One finished (or stopped) trial.
struct Observation {
  // The values it ran with, as proposed. A field missing, or with a value its distribution could
  // not have given (another choice, not a number), leaves this observation out of that field's
  // model; a number out of bounds counts as the nearest bound (the space may have been narrowed).
  ParamValues params;
  double value = 0;  // its metric; NaN ranks below every number
};

struct TpeOptions {
  int n_startup_trials = 10;  // random proposals until this many observations (>= 0)
  int n_ei_candidates = 24;   // draws from l(x) for each parameter (1 .. 10000)
  double prior_weight = 1.0;  // the prior kernel's weight; observations weigh 1 each (> 0)
  bool maximize = true;       // whether a higher value is better
};

// The proposal for trial `trial_index`, given the observations so far in the order their trials
// started (oldest first: recency weights depend on it). INVALID_ARGUMENT for options out of
// range. `space` must be valid (ParseSearchSpace).
absl::StatusOr<ParamValues> ProposeTpe(const SearchSpace& space, uint64_t seed, int64_t trial_index,
                                       const std::vector<Observation>& observations,
                                       const TpeOptions& options = {});

// How many of n observations are good: min(ceil(n / 10), 25).
int TpeGoodCount(int n);

// The kernels' weights for n observations, oldest first: 1 each up to 25; beyond, the newest 25
// weigh 1 and the older ones ramp up linearly from 1/n, so that a long search's model follows
// where it has been going lately.
std::vector<double> TpeWeights(int n);

}  // namespace traind

#endif  // TRAIND_SEARCH_TPE_SEARCHER_H_
