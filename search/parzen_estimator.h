// The two densities of the Tree-structured Parzen Estimator (tpe_searcher.h) for one parameter:
// l(x) over the good trials' values, g(x) over the others'. Each is a weighted mixture of one
// kernel per observed value plus one prior kernel that covers the whole range, so that neither
// density is ever zero where a value may be proposed.
//
// The bandwidths follow Optuna's univariate defaults (3.x, consider_endpoints=False,
// consider_magic_clip=True), re-derived rather than copied:
//  - a kernel's bandwidth is the larger of the gaps to its neighbours among the observed values
//    and the prior's centre, sorted; the smallest and the largest take the gap on their inner side
//    (the gap to the range's end would make a lone value near the middle as wide as half the
//    range);
//  - every bandwidth is clipped to [range / min(100, n + 2), range] (n observations): identical
//    values would otherwise give zero-width kernels whose density dwarfs everything else, and the
//    floor shrinks as evidence accumulates, down to 1% of the range;
//  - the prior kernel sits at the centre with the whole range as its bandwidth.
// Kernels are normals truncated to the range; the mixture weights are the callers' (TPE's recency
// ramp) and `prior_weight`, normalised.
//
// Value types, built for one proposal; the const methods may be called from any thread.
#ifndef TRAIND_SEARCH_PARZEN_ESTIMATOR_H_
#define TRAIND_SEARCH_PARZEN_ESTIMATOR_H_

#include <vector>

#include "search/search_random.h"

namespace traind {

// A real parameter, in the space where its distribution is uniform (log space for the log kinds);
// an integer one is the same density read as the mass of [x - 0.5, x + 0.5].
class NumericParzen {
 public:
  // `mus`: the observed values, each in [lo, hi] (lo < hi); `weights`: one >= 0 for each;
  // prior_weight > 0.
  NumericParzen(const std::vector<double>& mus, const std::vector<double>& weights, double lo,
                double hi, double prior_weight);

  // One draw, in [lo, hi]: a kernel by weight, then its truncated normal.
  double Sample(SearchRng& rng) const;
  // log of the density at y.
  double LogPdf(double y) const;
  // log of the mass of [y1, y2] (y1 < y2).
  double LogMass(double y1, double y2) const;

  // The kernels, the prior's last.
  const std::vector<double>& mus() const { return mus_; }
  const std::vector<double>& sigmas() const { return sigmas_; }

 private:
  double lo_;
  double hi_;
  std::vector<double> mus_;
  std::vector<double> sigmas_;
  std::vector<double> log_weights_;     // normalised
  std::vector<double> cumulative_;      // of the weights, for Sample
  std::vector<double> log_truncation_;  // log of each kernel's mass inside [lo, hi]
};

// A choice parameter over values 0 .. n_choices - 1. As in Optuna, each observation's kernel puts
// its weight on the observed value, smoothed by prior_weight / (n + 1) on every value, and the
// prior kernel is uniform.
class CategoricalParzen {
 public:
  CategoricalParzen(const std::vector<int>& observed, const std::vector<double>& weights,
                    int n_choices, double prior_weight);

  int Sample(SearchRng& rng) const;
  double LogPmf(int choice) const;

 private:
  std::vector<double> pmf_;
};

}  // namespace traind

#endif  // TRAIND_SEARCH_PARZEN_ESTIMATOR_H_
