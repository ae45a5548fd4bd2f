#include "search/random_searcher.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace traind {
namespace {

// Uniform on [low, high] in the space given by `to` and back by `from` (identity or log).
template <typename To, typename From>
double UniformIn(double low, double high, SearchRng& rng, To to, From from) {
  const double lo = to(low);
  const double x = from(lo + rng.Uniform01() * (to(high) - lo));
  return std::clamp(x, low, high);  // from(to(low)) may miss low by an ulp
}

double Identity(double x) { return x; }
double Log(double x) { return std::log(x); }
double Exp(double x) { return std::exp(x); }

}  // namespace

std::string SampleValue(const Distribution& d, SearchRng& rng) {
  switch (d.kind) {
    case Distribution::Kind::kUniform:
      return FormatReal(UniformIn(d.low, d.high, rng, Identity, Identity));
    case Distribution::Kind::kLogUniform:
      return FormatReal(UniformIn(d.low, d.high, rng, Log, Exp));
    case Distribution::Kind::kInt: {
      const auto low = static_cast<int64_t>(d.low);
      const auto span = static_cast<uint64_t>(static_cast<int64_t>(d.high) - low) + 1;
      return absl::StrCat(low + static_cast<int64_t>(rng.UniformInt(span)));
    }
    case Distribution::Kind::kLogInt: {
      const double x = UniformIn(d.low - 0.5, d.high + 0.5, rng, Log, Exp);
      return absl::StrCat(static_cast<int64_t>(std::clamp(std::round(x), d.low, d.high)));
    }
    case Distribution::Kind::kChoice:
      return d.choices[rng.UniformInt(d.choices.size())];
  }
  return "";
}

ParamValues ProposeRandom(const SearchSpace& space, uint64_t seed, int64_t trial_index) {
  ParamValues values;
  for (const auto& [field, distribution] : space.params) {
    SearchRng rng(StreamSeed(seed, trial_index, StableHash(absl::StrCat("random:", field))));
    values[field] = SampleValue(distribution, rng);
  }
  return values;
}

}  // namespace traind
