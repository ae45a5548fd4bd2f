#include "common/byte_size.h"

#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace traind {

namespace {

// 1024 to the power of the unit's place in "kmgt"; -1 for an unknown unit.
int UnitPower(std::string unit) {
  absl::AsciiStrToLower(&unit);
  if (unit.empty() || unit == "b") return 0;
  const std::string powers = "kmgt";
  const size_t power = powers.find(unit[0]);
  const std::string rest = unit.substr(1);
  if (power == std::string::npos || !(rest.empty() || rest == "b" || rest == "i" || rest == "ib")) {
    return -1;
  }
  return static_cast<int>(power) + 1;
}

}  // namespace

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  auto refuse = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a size of 0 or more, a whole number with an optional unit (e.g. "
                     "16GiB, 512MiB, 4096), got '",
                     text, "'"));
  };
  size_t digits = 0;
  while (digits < trimmed.size() && absl::ascii_isdigit(trimmed[digits])) ++digits;
  if (digits == 0) return refuse();
  const int power =
      UnitPower(std::string(absl::StripLeadingAsciiWhitespace(trimmed.substr(digits))));
  if (power < 0) return refuse();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {  // decimal, whatever zeros lead it
    const int digit = trimmed[i] - '0';
    if (value > (kMax - digit) / 10) return refuse();
    value = value * 10 + digit;
  }
  for (int i = 0; i < power; ++i) {
    if (value > kMax / 1024) return refuse();
    value *= 1024;
  }
  return value;
}

}  // namespace traind
