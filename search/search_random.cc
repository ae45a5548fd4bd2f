#include "search/search_random.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace traind {
namespace {

constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;
constexpr double kPi = 3.14159265358979323846;
constexpr double kSqrtHalf = 0.70710678118654752440;

// SplitMix64's output function (Stafford's Mix13): a bijection that spreads every input bit.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Polynomial(const double* coefficients, int n, double x) {
  double sum = coefficients[0];
  for (int i = 1; i < n; ++i) sum = sum * x + coefficients[i];
  return sum;
}

// log of the standard normal density.
double LogDensity(double z) { return -0.5 * z * z - 0.5 * std::log(2 * kPi); }

}  // namespace

uint64_t StableHash(absl::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

uint64_t StreamSeed(uint64_t search_seed, int64_t trial_index, uint64_t purpose) {
  // Each key goes through a full Mix before the next is added, so that nearby seeds, trials and
  // purposes give unrelated streams (a plain sum would make (s, k+1) and (s+1, k) collide).
  uint64_t h = Mix(search_seed + kGoldenGamma);
  h = Mix(h ^ (static_cast<uint64_t>(trial_index) + kGoldenGamma));
  return Mix(h ^ (purpose + kGoldenGamma));
}

uint64_t SearchRng::Next() {
  state_ += kGoldenGamma;
  return Mix(state_);
}

double SearchRng::Uniform01() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

uint64_t SearchRng::UniformInt(uint64_t n) {
  // 2^64 mod n, computed in 64 bits: the count of values at the bottom that would make the low
  // residues more likely than the others.
  const uint64_t threshold = (0 - n) % n;
  while (true) {
    const uint64_t x = Next();
    if (x >= threshold) return x % n;
  }
}

double NormalCdf(double z) { return 0.5 * std::erfc(-z * kSqrtHalf); }

double NormalQuantile(double p) {
  if (!(p > 0)) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  // P. J. Acklam's coefficients: a central rational function and one for each tail.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01, 1.0};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00, 1.0};
  constexpr double kTail = 0.02425;
  double x;
  if (p < kTail) {
    const double q = std::sqrt(-2 * std::log(p));
    x = Polynomial(c, 6, q) / Polynomial(d, 5, q);
  } else if (p <= 1 - kTail) {
    const double q = p - 0.5;
    x = q * Polynomial(a, 6, q * q) / Polynomial(b, 6, q * q);
  } else {
    const double q = std::sqrt(-2 * std::log1p(-p));
    x = -Polynomial(c, 6, q) / Polynomial(d, 5, q);
  }
  // One Halley step on Phi(x) - p brings the approximation's 1e-9 to about machine precision.
  const double e = NormalCdf(x) - p;
  const double u = e * std::sqrt(2 * kPi) * std::exp(0.5 * x * x);
  return x - u / (1 + 0.5 * x * u);
}

double LogNormalMass(double z1, double z2) {
  // Mirror an interval on the right: Phi keeps its digits in the left tail only.
  if (z1 > 0) return LogNormalMass(-z2, -z1);
  const double mass = NormalCdf(z2) - NormalCdf(z1);
  if (mass >= std::numeric_limits<double>::min()) return std::log(mass);
  // Both ends deep in the left tail (the CDFs underflow, or all but cancel): the density rises
  // towards z2, so the mass is at most phi(z2) * width, and at most Phi(z2) <= phi(z2) / |z2|; the
  // smaller bound is within a constant factor of the truth, which is all a density ratio needs.
  const double width = std::max(z2 - z1, std::numeric_limits<double>::min());
  return LogDensity(z2) + std::log(std::min(width, 1 / std::fabs(z2)));
}

double SampleTruncatedNormal(SearchRng& rng, double a, double b) {
  const double u = rng.Uniform01();
  const bool mirrored = a > 0;  // sample -x on [-b, -a] instead, for the same reason as above
  const double lo = mirrored ? -b : a;
  const double hi = mirrored ? -a : b;
  const double p_lo = NormalCdf(lo);
  double x = NormalQuantile(p_lo + u * (NormalCdf(hi) - p_lo));
  if (!(x >= lo)) x = lo;  // also when the interval's mass underflowed (x = -inf or NaN)
  x = std::min(x, hi);
  return mirrored ? -x : x;
}

}  // namespace traind
