// CLI11 validators whose messages a person reads at a glance. CLI11's PositiveNumber and
// NonNegativeNumber print their range's upper end, the largest double, in full: 309 digits.
// trainctl's verbs and traind's flag table use them.
#ifndef TRAIND_COMMON_CLI_CHECKS_H_
#define TRAIND_COMMON_CLI_CHECKS_H_

#include <cstdint>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"

namespace traind {

// An integer >= `min`: "must be an integer of at least 1, got 0".
inline CLI::Validator AtLeast(int64_t min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        int64_t number = 0;
        if (!CLI::detail::lexical_cast(value, number) || number < min) {
          return "must be an integer of at least " + std::to_string(min) + ", got " + value;
        }
        return "";
      },
      "INT>=" + std::to_string(min));
}

// A number at or above `bound` (above it where `strictly`): "must be above 0, got 0",
// "must be 0 or more, got -1".
inline CLI::Validator NumberAtLeast(double bound, bool strictly) {
  std::ostringstream shown;
  shown << bound;
  const std::string need = "must be " + std::string(strictly ? "above " : "") + shown.str() +
                           (strictly ? "" : " or more");
  return CLI::Validator(
      [bound, strictly, need](std::string& value) -> std::string {
        double number = 0;
        if (!CLI::detail::lexical_cast(value, number)) return "'" + value + "' is not a number";
        const bool within = strictly ? number > bound : number >= bound;
        return within ? "" : need + ", got " + value;
      },
      strictly ? "POSITIVE" : "NONNEGATIVE");
}

}  // namespace traind

#endif  // TRAIND_COMMON_CLI_CHECKS_H_
