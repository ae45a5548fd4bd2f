// Random search: each trial's values drawn independently from the space's distributions, as a
// pure function of (space, seed, trial index), so that trial k of a search is the same on every
// run. Each field draws from its own stream (search_random.h), keyed by its name: adding,
// removing or reordering fields leaves the others' values as they were.
// Pure functions: any thread may call them.
#ifndef TRAIND_SEARCH_RANDOM_SEARCHER_H_
#define TRAIND_SEARCH_RANDOM_SEARCHER_H_

#include <cstdint>
#include <string>

#include "search/search_random.h"
#include "search/search_space.h"

namespace traind {

// uniform: uniform on [low, high]; loguniform: uniform in log space; int: each integer of
// [low, high] alike; logint: uniform in log space on [low - 0.5, high + 0.5], rounded (so each
// integer's chance is proportional to its share of the log axis); choice: each value alike.
// `space` must be valid (ParseSearchSpace, ValidateDistribution).
ParamValues ProposeRandom(const SearchSpace& space, uint64_t seed, int64_t trial_index);

// One draw from `distribution`, as text (search_space.h's formats).
std::string SampleValue(const Distribution& distribution, SearchRng& rng);

}  // namespace traind

#endif  // TRAIND_SEARCH_RANDOM_SEARCHER_H_
