// A hyper-parameter search space: for each JobSpec field (named as SetSpecField names it:
// "learning_rate", "batch_size", "param.lr"), the distribution its values are drawn from,
// written as a user types it on the command line:
//
//   uniform:LOW:HIGH      a real in [LOW, HIGH]                     uniform:0.1:0.9
//   loguniform:LOW:HIGH   a real in [LOW, HIGH], uniform in log     loguniform:1e-4:1e-1
//   int:LOW:HIGH          an integer in [LOW, HIGH]                 int:1:8
//   logint:LOW:HIGH       an integer in [LOW, HIGH], uniform in log logint:16:1024
//   choice:A,B,...        one of the values, kept as typed          choice:64,128,256
//
// Values are proposed as text, for SetSpecField to parse by the field's type: a real with the
// fewest digits that read back as the same double, an integer as an integer, a choice as typed.
// Pure functions and value types: any thread may call them.
#ifndef TRAIND_SEARCH_SEARCH_SPACE_H_
#define TRAIND_SEARCH_SEARCH_SPACE_H_

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace traind {

// Bounds on what a user may type, checked before any work.
inline constexpr size_t kMaxDistributionText = 4096;
inline constexpr size_t kMaxChoices = 1000;
inline constexpr size_t kMaxSearchParams = 256;
// Integer bounds stay within what a double holds exactly.
inline constexpr double kMaxIntBound = 9007199254740992.0;  // 2^53

struct Distribution {
  enum class Kind { kUniform, kLogUniform, kInt, kLogInt, kChoice };
  Kind kind = Kind::kUniform;
  // Inclusive bounds of every kind but kChoice: low < high, both finite; 0 < low for
  // kLogUniform; integers for kInt and kLogInt, with 1 <= low for kLogInt.
  double low = 0;
  double high = 0;
  // kChoice: 1 to kMaxChoices distinct, non-empty values without ','.
  std::vector<std::string> choices;
};

// Whether values of `kind` are integers (kInt, kLogInt); whether they are uniform in log space
// (kLogUniform, kLogInt).
bool IsIntegerKind(Distribution::Kind kind);
bool IsLogKind(Distribution::Kind kind);

// INVALID_ARGUMENT naming `field`, what was typed and what is allowed, e.g.
// "lr: loguniform needs 0 < low < high, got loguniform:0:1".
absl::StatusOr<Distribution> ParseDistribution(absl::string_view field, absl::string_view text);

// The rules above, for a Distribution built in code (ParseDistribution applies them too).
absl::Status ValidateDistribution(absl::string_view field, const Distribution& distribution);

// Whether `text` starts with a kind and ':' ("loguniform:..."), i.e. is meant as a distribution
// rather than a value or a list of values ("0.1,0.2").
bool LooksLikeDistribution(absl::string_view text);

// The text form; ParseDistribution(field, DistributionText(d)) gives d back.
std::string DistributionText(const Distribution& distribution);

struct SearchSpace {
  // In the order given; each field once.
  std::vector<std::pair<std::string, Distribution>> params;
};

// Parses (field, text) pairs. INVALID_ARGUMENT for any ParseDistribution error, an empty field,
// a field given twice, or more than kMaxSearchParams fields. An empty list is an empty space.
absl::StatusOr<SearchSpace> ParseSearchSpace(
    const std::vector<std::pair<std::string, std::string>>& fields);

// A proposal: field -> value as text.
using ParamValues = std::map<std::string, std::string>;

// The shortest text that reads back as the same double ("0.1", not "0.10000000000000001").
std::string FormatReal(double value);

}  // namespace traind

#endif  // TRAIND_SEARCH_SEARCH_SPACE_H_
