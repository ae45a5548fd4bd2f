#include "search/tpe_searcher.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "search/parzen_estimator.h"
#include "search/random_searcher.h"
#include "search/search_random.h"

namespace traind {
namespace {

using Kind = Distribution::Kind;

constexpr double kWorstScore = -std::numeric_limits<double>::infinity();
constexpr int kMaxEiCandidates = 10000;

// One observation of one parameter.
struct Point {
  size_t order;  // its index in the observations: older first
  double value;  // the trial's metric
  double x;      // the parameter in the model's space: log for the log kinds, a choice's index
};

// `text` in the model's space, or nullopt when `d` could not have proposed it.
std::optional<double> ModelValue(const Distribution& d, const std::string& text) {
  if (d.kind == Kind::kChoice) {
    const auto it = std::find(d.choices.begin(), d.choices.end(), text);
    if (it == d.choices.end()) return std::nullopt;
    return static_cast<double>(it - d.choices.begin());
  }
  double x;
  if (!absl::SimpleAtod(text, &x) || !std::isfinite(x)) return std::nullopt;
  if (IsIntegerKind(d.kind)) x = std::round(x);
  x = std::clamp(x, d.low, d.high);
  return IsLogKind(d.kind) ? std::log(x) : x;
}

std::vector<Point> PointsOf(const std::string& field, const Distribution& d,
                            const std::vector<Observation>& observations) {
  std::vector<Point> points;
  for (size_t i = 0; i < observations.size(); ++i) {
    const auto it = observations[i].params.find(field);
    if (it == observations[i].params.end()) continue;
    if (std::optional<double> x = ModelValue(d, it->second)) {
      points.push_back({i, observations[i].value, *x});
    }
  }
  return points;
}

// Splits `points` into the best TpeGoodCount and the rest, each back in trial order. Equal values
// rank the older trial first, so the split never depends on how a sort orders ties.
void Split(std::vector<Point> points, bool maximize, std::vector<Point>* good,
           std::vector<Point>* bad) {
  const auto rank = [maximize](const Point& p) {
    if (std::isnan(p.value)) return HUGE_VAL;  // ranks last
    return maximize ? -p.value : p.value;
  };
  std::sort(points.begin(), points.end(), [&](const Point& a, const Point& b) {
    const double ra = rank(a), rb = rank(b);
    return ra != rb ? ra < rb : a.order < b.order;
  });
  const size_t n_good = TpeGoodCount(static_cast<int>(points.size()));
  good->assign(points.begin(), points.begin() + n_good);
  bad->assign(points.begin() + n_good, points.end());
  const auto by_order = [](const Point& a, const Point& b) { return a.order < b.order; };
  std::sort(good->begin(), good->end(), by_order);
  std::sort(bad->begin(), bad->end(), by_order);
}

std::vector<double> Xs(const std::vector<Point>& points) {
  std::vector<double> xs;
  for (const Point& p : points) xs.push_back(p.x);
  return xs;
}

// NaN (both densities -inf) ranks below every real score.
double Score(double log_l, double log_g) {
  const double score = log_l - log_g;
  return std::isnan(score) ? kWorstScore : score;
}

std::string ProposeNumeric(const Distribution& d, const std::vector<Point>& good,
                           const std::vector<Point>& bad, const TpeOptions& options,
                           SearchRng& rng) {
  const bool log = IsLogKind(d.kind);
  const bool discrete = IsIntegerKind(d.kind);
  const auto to_model = [log](double v) { return log ? std::log(v) : v; };
  const auto from_model = [log](double y) { return log ? std::exp(y) : y; };
  const double lo = to_model(discrete ? d.low - 0.5 : d.low);
  const double hi = to_model(discrete ? d.high + 0.5 : d.high);
  const NumericParzen l(Xs(good), TpeWeights(static_cast<int>(good.size())), lo, hi,
                        options.prior_weight);
  const NumericParzen g(Xs(bad), TpeWeights(static_cast<int>(bad.size())), lo, hi,
                        options.prior_weight);
  double best_score = kWorstScore;
  std::string best;
  for (int i = 0; i < options.n_ei_candidates; ++i) {
    const double y = l.Sample(rng);
    double score;
    std::string text;
    if (discrete) {
      const double k = std::clamp(std::round(from_model(y)), d.low, d.high);
      const double y1 = to_model(k - 0.5), y2 = to_model(k + 0.5);
      score = Score(l.LogMass(y1, y2), g.LogMass(y1, y2));
      text = absl::StrCat(static_cast<int64_t>(k));
    } else {
      score = Score(l.LogPdf(y), g.LogPdf(y));
      text = FormatReal(std::clamp(from_model(y), d.low, d.high));
    }
    if (i == 0 || score > best_score) {
      best_score = score;
      best = std::move(text);
    }
  }
  return best;
}

std::string ProposeChoice(const Distribution& d, const std::vector<Point>& good,
                          const std::vector<Point>& bad, const TpeOptions& options,
                          SearchRng& rng) {
  const auto indexes = [](const std::vector<Point>& points) {
    std::vector<int> out;
    for (const Point& p : points) out.push_back(static_cast<int>(p.x));
    return out;
  };
  const int n = static_cast<int>(d.choices.size());
  const CategoricalParzen l(indexes(good), TpeWeights(static_cast<int>(good.size())), n,
                            options.prior_weight);
  const CategoricalParzen g(indexes(bad), TpeWeights(static_cast<int>(bad.size())), n,
                            options.prior_weight);
  double best_score = kWorstScore;
  int best = 0;
  for (int i = 0; i < options.n_ei_candidates; ++i) {
    const int c = l.Sample(rng);
    const double score = Score(l.LogPmf(c), g.LogPmf(c));
    if (i == 0 || score > best_score) {
      best_score = score;
      best = c;
    }
  }
  return d.choices[best];
}

absl::Status ValidateOptions(const TpeOptions& o) {
  if (o.n_startup_trials < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tpe: n_startup_trials must be 0 or more, got ", o.n_startup_trials));
  }
  if (o.n_ei_candidates < 1 || o.n_ei_candidates > kMaxEiCandidates) {
    return absl::InvalidArgumentError(absl::StrCat("tpe: n_ei_candidates must be 1 to ",
                                                   kMaxEiCandidates, ", got ", o.n_ei_candidates));
  }
  if (!(o.prior_weight > 0) || !std::isfinite(o.prior_weight)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tpe: prior_weight must be a positive number, got ", o.prior_weight));
  }
  return absl::OkStatus();
}

}  // namespace

int TpeGoodCount(int n) { return std::min((n + 9) / 10, 25); }

std::vector<double> TpeWeights(int n) {
  constexpr int kFlat = 25;
  if (n <= kFlat) return std::vector<double>(std::max(n, 0), 1.0);
  std::vector<double> weights;
  const int ramp = n - kFlat;
  const double first = 1.0 / n;
  for (int i = 0; i < ramp; ++i) {
    weights.push_back(ramp == 1 ? first : first + (1.0 - first) * i / (ramp - 1));
  }
  weights.resize(n, 1.0);
  return weights;
}

absl::StatusOr<ParamValues> ProposeTpe(const SearchSpace& space, uint64_t seed, int64_t trial_index,
                                       const std::vector<Observation>& observations,
                                       const TpeOptions& options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  if (observations.size() < static_cast<size_t>(options.n_startup_trials)) {
    return ProposeRandom(space, seed, trial_index);
  }
  ParamValues values;
  for (const auto& [field, d] : space.params) {
    SearchRng rng(StreamSeed(seed, trial_index, StableHash(absl::StrCat("tpe:", field))));
    std::vector<Point> points = PointsOf(field, d, observations);
    if (points.empty()) {  // nothing known about this field yet
      values[field] = SampleValue(d, rng);
      continue;
    }
    std::vector<Point> good, bad;
    Split(std::move(points), options.maximize, &good, &bad);
    values[field] = d.kind == Kind::kChoice ? ProposeChoice(d, good, bad, options, rng)
                                            : ProposeNumeric(d, good, bad, options, rng);
  }
  return values;
}

}  // namespace traind
