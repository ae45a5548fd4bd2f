#include "common/proc_file.h"

#include <fstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace traind {

int64_t ProcKilobytes(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, key + ":")) {
      std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipWhitespace());
      int64_t kb = 0;
      if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &kb)) return kb * 1024;
    }
  }
  return 0;
}

}  // namespace traind
