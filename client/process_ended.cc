#include "client/process_ended.h"

#include <signal.h>

#include <cerrno>
#include <fstream>
#include <string>

namespace traind {

bool ProcessEnded(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  // Linux: the state is the first field after the command, which is in parentheses and may
  // itself hold spaces and parentheses. Elsewhere there is no /proc: only "gone" counts.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

}  // namespace traind
