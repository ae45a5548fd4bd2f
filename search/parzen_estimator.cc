#include "search/parzen_estimator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace traind {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Bandwidths of the kernels at `mus` (the header's rule), the prior's centre included in the
// neighbours but not in the result.
std::vector<double> Bandwidths(const std::vector<double>& mus, double lo, double hi) {
  const size_t n = mus.size();
  std::vector<double> points = mus;
  points.push_back(0.5 * (lo + hi));
  std::vector<size_t> order(n + 1);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return points[a] < points[b]; });
  std::vector<double> sigmas(n + 1);
  for (size_t r = 0; r <= n; ++r) {
    const double x = points[order[r]];
    const double left = x - (r == 0 ? lo : points[order[r - 1]]);
    const double right = (r == n ? hi : points[order[r + 1]]) - x;
    if (r == 0 && n > 0) {
      sigmas[order[r]] = right;
    } else if (r == n && n > 0) {
      sigmas[order[r]] = left;
    } else {
      sigmas[order[r]] = std::max(left, right);
    }
  }
  sigmas.pop_back();  // the prior's own bandwidth is the range
  const double range = hi - lo;
  const double floor = range / std::min(100.0, static_cast<double>(n) + 2);
  for (double& sigma : sigmas) sigma = std::clamp(sigma, floor, range);
  return sigmas;
}

// log(sum(exp(terms))), without overflow; -inf when every term is.
double LogSumExp(const std::vector<double>& terms) {
  const double top = *std::max_element(terms.begin(), terms.end());
  if (!std::isfinite(top)) return top;
  double sum = 0;
  for (double t : terms) sum += std::exp(t - top);
  return top + std::log(sum);
}

// Normalised weights and their running sum; the last sum is exactly 1 so that a draw in [0, 1)
// always lands on a kernel.
void Normalise(std::vector<double> weights, std::vector<double>* log_weights,
               std::vector<double>* cumulative) {
  double total = 0;
  for (double w : weights) total += w;
  double running = 0;
  for (double w : weights) {
    log_weights->push_back(std::log(w / total));
    running += w / total;
    cumulative->push_back(running);
  }
  cumulative->back() = 1;
}

size_t PickKernel(const std::vector<double>& cumulative, double u) {
  return std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin();
}

}  // namespace

NumericParzen::NumericParzen(const std::vector<double>& mus, const std::vector<double>& weights,
                             double lo, double hi, double prior_weight)
    : lo_(lo), hi_(hi), mus_(mus), sigmas_(Bandwidths(mus, lo, hi)) {
  mus_.push_back(0.5 * (lo + hi));
  sigmas_.push_back(hi - lo);
  std::vector<double> all_weights = weights;
  all_weights.push_back(prior_weight);
  Normalise(std::move(all_weights), &log_weights_, &cumulative_);
  for (size_t i = 0; i < mus_.size(); ++i) {
    log_truncation_.push_back(
        LogNormalMass((lo_ - mus_[i]) / sigmas_[i], (hi_ - mus_[i]) / sigmas_[i]));
  }
}

double NumericParzen::Sample(SearchRng& rng) const {
  const size_t i = std::min(PickKernel(cumulative_, rng.Uniform01()), mus_.size() - 1);
  const double z =
      SampleTruncatedNormal(rng, (lo_ - mus_[i]) / sigmas_[i], (hi_ - mus_[i]) / sigmas_[i]);
  return std::clamp(mus_[i] + sigmas_[i] * z, lo_, hi_);
}

double NumericParzen::LogPdf(double y) const {
  const double log_sqrt_2pi = 0.5 * std::log(2 * 3.14159265358979323846);
  std::vector<double> terms(mus_.size());
  for (size_t i = 0; i < mus_.size(); ++i) {
    const double z = (y - mus_[i]) / sigmas_[i];
    terms[i] =
        log_weights_[i] - 0.5 * z * z - std::log(sigmas_[i]) - log_sqrt_2pi - log_truncation_[i];
  }
  return LogSumExp(terms);
}

double NumericParzen::LogMass(double y1, double y2) const {
  std::vector<double> terms(mus_.size());
  for (size_t i = 0; i < mus_.size(); ++i) {
    terms[i] = log_weights_[i] +
               LogNormalMass((y1 - mus_[i]) / sigmas_[i], (y2 - mus_[i]) / sigmas_[i]) -
               log_truncation_[i];
  }
  return LogSumExp(terms);
}

CategoricalParzen::CategoricalParzen(const std::vector<int>& observed,
                                     const std::vector<double>& weights, int n_choices,
                                     double prior_weight)
    : pmf_(n_choices, 0) {
  const double n = static_cast<double>(observed.size());
  const double smoothing = prior_weight / (n + 1);  // on every value, in each observed kernel
  const double kernel_total = n_choices * smoothing + 1;
  double observed_weight = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    pmf_[observed[i]] += weights[i] / kernel_total;
    observed_weight += weights[i];
  }
  const double total = observed_weight + prior_weight;
  for (double& p : pmf_) {
    p = (p + observed_weight * smoothing / kernel_total + prior_weight / n_choices) / total;
  }
}

int CategoricalParzen::Sample(SearchRng& rng) const {
  const double u = rng.Uniform01();
  double running = 0;
  for (size_t c = 0; c + 1 < pmf_.size(); ++c) {
    running += pmf_[c];
    if (u < running) return static_cast<int>(c);
  }
  return static_cast<int>(pmf_.size()) - 1;
}

double CategoricalParzen::LogPmf(int choice) const {
  return pmf_[choice] > 0 ? std::log(pmf_[choice]) : -kInf;
}

}  // namespace traind
