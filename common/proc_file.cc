#include "common/proc_file.h"

#include <cstdio>
#include <fstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string text;
  if (!std::getline(stat, text)) return std::nullopt;
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  ProcStat fields;
  long parent = 0, group = 0, session = 0;  // NOLINT(runtime/int): sscanf's %ld
  if (std::sscanf(text.c_str() + close + 1, " %c %ld %ld %ld", &fields.state, &parent, &group,
                  &session) != 4) {
    return std::nullopt;
  }
  fields.parent = static_cast<pid_t>(parent);
  fields.process_group = static_cast<pid_t>(group);
  fields.session = static_cast<pid_t>(session);
  return fields;
}

}  // namespace traind
