// Reproducible randomness for hyper-parameter search. A search must propose the same trials on
// every run, so that a daemon restarted after kill -9 picks up where it was: each proposal draws
// from its own stream, seeded from (search seed, trial index, purpose) alone, never from a clock,
// a process-salted hash (absl::Hash) or a library distribution whose algorithm the standard
// leaves to the implementation (std::uniform_real_distribution, std::normal_distribution).
//
// The integer stream, Uniform01 and UniformInt are exact on every platform, and the library is
// built without fused multiply-adds (search/CMakeLists.txt) so that plain arithmetic is too. What
// goes through libm (erfc here, exp and log in the searchers) is bit-identical across runs and
// restarts of one build; another libm may differ in a last bit, which moves a real value by an
// ulp or, rarely, flips a near-tie between two TPE candidates.
//
// Everything here is a pure function or a value type; a SearchRng is not thread-safe, but each
// caller makes its own.
#ifndef TRAIND_SEARCH_SEARCH_RANDOM_H_
#define TRAIND_SEARCH_SEARCH_RANDOM_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace traind {

// FNV-1a (64 bits) of `text`: a name turned into a purpose that is the same in every process.
uint64_t StableHash(absl::string_view text);

// The seed of the stream for one purpose (e.g. StableHash("random:lr")) of one trial of a search.
uint64_t StreamSeed(uint64_t search_seed, int64_t trial_index, uint64_t purpose);

// SplitMix64 (Steele, Lea, Flood 2014): 64-bit state, passes BigCrush, and small enough to state
// here so that its output is defined by this file rather than by a library version.
class SearchRng {
 public:
  explicit SearchRng(uint64_t seed) : state_(seed) {}

  uint64_t Next();
  // Uniform in [0, 1): the top 53 bits of Next() times 2^-53.
  double Uniform01();
  // Uniform in [0, n), without modulo bias (rejects the top 2^64 mod n values). n >= 1.
  uint64_t UniformInt(uint64_t n);

 private:
  uint64_t state_;
};

// The standard normal CDF, Phi(z) = erfc(-z / sqrt(2)) / 2.
double NormalCdf(double z);

// Phi^-1(p) for p in (0, 1): Acklam's rational approximation refined by one Halley step (about
// 1e-15 relative error). -inf for p <= 0, +inf for p >= 1.
double NormalQuantile(double p);

// log(Phi(z2) - Phi(z1)) for z1 <= z2, accurate in both tails (where the difference of two CDFs
// near 1 would lose every digit) and finite far beyond them (an asymptotic bound once both
// underflow), so that a density ratio never becomes inf - inf.
double LogNormalMass(double z1, double z2);

// A standard normal truncated to [a, b] (a < b), by inverting the CDF: one Uniform01 per draw, so
// the stream advances the same way whatever the bounds.
double SampleTruncatedNormal(SearchRng& rng, double a, double b);

}  // namespace traind

#endif  // TRAIND_SEARCH_SEARCH_RANDOM_H_
