// CLI11 validators whose messages a person reads at a glance. CLI11's PositiveNumber and
// NonNegativeNumber print their range's upper end, the largest double, in full: 309 digits.
#ifndef TRAIND_CLIENT_CLI_CHECKS_H_
#define TRAIND_CLIENT_CLI_CHECKS_H_

#include <cstdint>
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

}  // namespace traind

#endif  // TRAIND_CLIENT_CLI_CHECKS_H_
