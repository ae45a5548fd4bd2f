#include "common/nearest_word.h"

#include <algorithm>

#include "absl/strings/match.h"

namespace traind {

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// neighbours (the commonest typo: --modle) each cost 1.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string NearestWord(const std::string& word, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = 0;
  // One typo in four letters at most, and never more than 3: "--lr" is not a typo of "--lrs-x".
  const size_t allowed = std::min<size_t>(3, std::max<size_t>(1, word.size() / 4));
  for (const std::string& candidate : known) {
    const size_t distance = EditDistance(word, candidate);
    if (distance <= allowed && (best.empty() || distance < best_distance)) {
      best = candidate;
      best_distance = distance;
    }
  }
  if (!best.empty()) return best;
  // A cut-short word ("--lr-sched"): the one known word it begins, when only one does.
  if (word.size() >= 4) {
    for (const std::string& candidate : known) {
      if (absl::StartsWith(candidate, word)) {
        if (!best.empty()) return "";
        best = candidate;
      }
    }
  }
  return best;
}

}  // namespace traind
