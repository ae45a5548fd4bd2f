#include "search/search_space.h"

#include <cmath>
#include <cstdint>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace traind {
namespace {

using Kind = Distribution::Kind;

struct KindName {
  absl::string_view name;
  Kind kind;
};
constexpr KindName kKinds[] = {{"uniform", Kind::kUniform},
                               {"loguniform", Kind::kLogUniform},
                               {"int", Kind::kInt},
                               {"logint", Kind::kLogInt},
                               {"choice", Kind::kChoice}};
constexpr absl::string_view kAllowed =
    "uniform:LOW:HIGH, loguniform:LOW:HIGH, int:LOW:HIGH, logint:LOW:HIGH or choice:A,B,...";

absl::string_view KindText(Kind kind) {
  for (const KindName& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "?";
}

// What the user typed, cut short enough for an error message.
std::string Shown(absl::string_view text) {
  constexpr size_t kMaxShown = 80;
  if (text.size() <= kMaxShown) return std::string(text);
  return absl::StrCat(text.substr(0, kMaxShown), "...");
}

absl::Status Invalid(absl::string_view field, absl::string_view what, absl::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what, ", got ", Shown(text)));
}

absl::Status ValidateChoices(absl::string_view field, const std::vector<std::string>& choices,
                             absl::string_view shown) {
  if (choices.empty()) return Invalid(field, "choice needs at least one value", shown);
  if (choices.size() > kMaxChoices) {
    return Invalid(field, absl::StrCat("choice takes at most ", kMaxChoices, " values"), shown);
  }
  std::set<absl::string_view> seen;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i].empty()) {
      return Invalid(field, absl::StrCat("choice value ", i + 1, " is empty"), shown);
    }
    if (choices[i].find(',') != std::string::npos) {
      return Invalid(field, "a choice value cannot contain ','", shown);
    }
    if (!seen.insert(choices[i]).second) {
      return Invalid(field, absl::StrCat("choice lists '", Shown(choices[i]), "' twice"), shown);
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateBounds(absl::string_view field, const Distribution& d,
                            absl::string_view shown) {
  const absl::string_view kind = KindText(d.kind);
  if (!std::isfinite(d.low) || !std::isfinite(d.high)) {
    return Invalid(field, absl::StrCat(kind, " bounds must be finite numbers"), shown);
  }
  if (IsIntegerKind(d.kind)) {
    if (std::floor(d.low) != d.low || std::floor(d.high) != d.high) {
      return Invalid(field, absl::StrCat(kind, " bounds must be integers"), shown);
    }
    if (std::fabs(d.low) > kMaxIntBound || std::fabs(d.high) > kMaxIntBound) {
      return Invalid(field, absl::StrCat(kind, " bounds must be within +-2^53"), shown);
    }
  }
  switch (d.kind) {
    case Kind::kLogUniform:
      if (!(0 < d.low && d.low < d.high)) {
        return Invalid(field, "loguniform needs 0 < low < high", shown);
      }
      return absl::OkStatus();
    case Kind::kLogInt:
      if (!(1 <= d.low && d.low < d.high)) {
        return Invalid(field, "logint needs 1 <= low < high", shown);
      }
      return absl::OkStatus();
    default:
      if (!(d.low < d.high)) return Invalid(field, absl::StrCat(kind, " needs low < high"), shown);
      return absl::OkStatus();
  }
}

absl::Status Validate(absl::string_view field, const Distribution& d, absl::string_view shown) {
  if (d.kind == Kind::kChoice) return ValidateChoices(field, d.choices, shown);
  return ValidateBounds(field, d, shown);
}

// One bound of `text`. An integer kind's bound is read as an integer first, so that one beyond
// 2^53 is refused rather than rounded; 1.5 or 1e3 read as reals are left to ValidateBounds.
absl::Status ParseBound(absl::string_view field, Kind kind, absl::string_view part,
                        absl::string_view text, double* out) {
  int64_t value;
  if (IsIntegerKind(kind) && absl::SimpleAtoi(part, &value)) {
    *out = static_cast<double>(value);
    if (std::fabs(static_cast<double>(value)) > kMaxIntBound ||
        static_cast<int64_t>(*out) != value) {
      return Invalid(field, absl::StrCat(KindText(kind), " bounds must be within +-2^53"), text);
    }
    return absl::OkStatus();
  }
  if (absl::SimpleAtod(part, out)) return absl::OkStatus();
  return Invalid(field, absl::StrCat(KindText(kind), " bound '", Shown(part), "' is not a number"),
                 text);
}

absl::StatusOr<Distribution> ParseBounds(absl::string_view field, Kind kind, absl::string_view rest,
                                         absl::string_view text) {
  const std::vector<absl::string_view> parts = absl::StrSplit(rest, ':');
  if (parts.size() != 2) {
    return Invalid(field, absl::StrCat(KindText(kind), " needs ", KindText(kind), ":LOW:HIGH"),
                   text);
  }
  Distribution d;
  d.kind = kind;
  if (absl::Status s = ParseBound(field, kind, parts[0], text, &d.low); !s.ok()) return s;
  if (absl::Status s = ParseBound(field, kind, parts[1], text, &d.high); !s.ok()) return s;
  return d;
}

}  // namespace

bool IsIntegerKind(Kind kind) { return kind == Kind::kInt || kind == Kind::kLogInt; }
bool IsLogKind(Kind kind) { return kind == Kind::kLogUniform || kind == Kind::kLogInt; }

absl::StatusOr<Distribution> ParseDistribution(absl::string_view field, absl::string_view text) {
  if (text.size() > kMaxDistributionText) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": a distribution is at most ",
                                                   kMaxDistributionText, " characters, got ",
                                                   text.size()));
  }
  const size_t colon = text.find(':');
  const KindName* found = nullptr;
  for (const KindName& k : kKinds) {
    if (colon != absl::string_view::npos && text.substr(0, colon) == k.name) found = &k;
  }
  if (found == nullptr) return Invalid(field, absl::StrCat("expected ", kAllowed), text);
  const absl::string_view rest = text.substr(colon + 1);
  Distribution d;
  if (found->kind == Kind::kChoice) {
    d.kind = Kind::kChoice;
    if (!rest.empty()) d.choices = absl::StrSplit(rest, ',');
  } else {
    absl::StatusOr<Distribution> bounds = ParseBounds(field, found->kind, rest, text);
    if (!bounds.ok()) return bounds.status();
    d = *std::move(bounds);
  }
  if (absl::Status s = Validate(field, d, text); !s.ok()) return s;
  return d;
}

absl::Status ValidateDistribution(absl::string_view field, const Distribution& distribution) {
  return Validate(field, distribution, DistributionText(distribution));
}

bool LooksLikeDistribution(absl::string_view text) {
  for (const KindName& k : kKinds) {
    if (text.size() > k.name.size() && text.substr(0, k.name.size()) == k.name &&
        text[k.name.size()] == ':') {
      return true;
    }
  }
  return false;
}

std::string DistributionText(const Distribution& d) {
  if (d.kind == Kind::kChoice) return absl::StrCat("choice:", absl::StrJoin(d.choices, ","));
  if (IsIntegerKind(d.kind) && std::fabs(d.low) <= kMaxIntBound &&
      std::fabs(d.high) <= kMaxIntBound) {
    return absl::StrCat(KindText(d.kind), ":", static_cast<int64_t>(d.low), ":",
                        static_cast<int64_t>(d.high));
  }
  return absl::StrCat(KindText(d.kind), ":", FormatReal(d.low), ":", FormatReal(d.high));
}

absl::StatusOr<SearchSpace> ParseSearchSpace(
    const std::vector<std::pair<std::string, std::string>>& fields) {
  if (fields.size() > kMaxSearchParams) {
    return absl::InvalidArgumentError(absl::StrCat("a search space has at most ", kMaxSearchParams,
                                                   " fields, got ", fields.size()));
  }
  SearchSpace space;
  std::set<absl::string_view> seen;
  for (const auto& [field, text] : fields) {
    if (field.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("a searched field needs a name, got '", Shown(text), "' alone"));
    }
    if (!seen.insert(field).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(Shown(field), ": searched twice; give each field one distribution"));
    }
    absl::StatusOr<Distribution> d = ParseDistribution(field, text);
    if (!d.ok()) return d.status();
    space.params.emplace_back(field, *std::move(d));
  }
  return space;
}

std::string FormatReal(double value) {
  if (!std::isfinite(value)) return absl::StrFormat("%g", value);
  for (int digits = 1; digits < 17; ++digits) {
    const std::string text = absl::StrFormat("%.*g", digits, value);
    double back;
    if (absl::SimpleAtod(text, &back) && back == value) return text;
  }
  return absl::StrFormat("%.17g", value);
}

}  // namespace traind
