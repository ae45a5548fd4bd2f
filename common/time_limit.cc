#include "common/time_limit.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace traind {

namespace {

absl::Status Bad(const std::string& text) {
  return absl::InvalidArgumentError(
      absl::StrCat("time_limit: '", text.substr(0, 32),
                   "': minutes (30), MM:SS, H:MM:SS or D-HH[:MM[:SS]], as sbatch --time, above 0"));
}

}  // namespace

absl::StatusOr<absl::Duration> ParseTimeLimit(const std::string& text) {
  if (text.empty() || text.size() > 16) return Bad(text);
  int64_t days = 0;
  std::string clock = text;
  const size_t dash = text.find('-');
  if (dash != std::string::npos) {
    if (!absl::SimpleAtoi(text.substr(0, dash), &days) || days < 0) return Bad(text);
    clock = text.substr(dash + 1);
  }
  std::vector<int64_t> parts;
  for (absl::string_view part : absl::StrSplit(clock, ':')) {
    int64_t value = 0;
    if (part.empty() || part.size() > 6 || !absl::SimpleAtoi(part, &value) || value < 0) {
      return Bad(text);
    }
    parts.push_back(value);
  }
  if (parts.empty() || parts.size() > 3) return Bad(text);
  int64_t seconds = 0;
  if (dash != std::string::npos) {  // D-HH, D-HH:MM, D-HH:MM:SS
    const int64_t minutes = parts.size() > 1 ? parts[1] : 0;
    const int64_t secs = parts.size() > 2 ? parts[2] : 0;
    seconds = ((days * 24 + parts[0]) * 60 + minutes) * 60 + secs;
  } else if (parts.size() == 1) {  // minutes
    seconds = parts[0] * 60;
  } else if (parts.size() == 2) {  // MM:SS
    seconds = parts[0] * 60 + parts[1];
  } else {  // H:MM:SS
    seconds = (parts[0] * 60 + parts[1]) * 60 + parts[2];
  }
  if (seconds <= 0 || seconds > int64_t{365} * 24 * 3600) return Bad(text);
  return absl::Seconds(seconds);
}

}  // namespace traind
