// "Did you mean ...?": the known word nearest to a mistyped one (trainctl's verbs and options,
// traind's config keys).
#ifndef TRAIND_COMMON_NEAREST_WORD_H_
#define TRAIND_COMMON_NEAREST_WORD_H_

#include <string>
#include <vector>

namespace traind {

// The known word nearest to `word` (edit distance, or a longer word it begins), or "" when none
// is near enough to be the one meant.
std::string NearestWord(const std::string& word, const std::vector<std::string>& known);

}  // namespace traind

#endif  // TRAIND_COMMON_NEAREST_WORD_H_
