// This process's traind-worker children, read from /proc: the daemon in an integration test
// runs in the test's process, so its workers (and its fork server) are the test's children.
#ifndef TRAIND_TESTS_WORKER_CHILDREN_H_
#define TRAIND_TESTS_WORKER_CHILDREN_H_

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "supervise/fork_server.h"

namespace traind {

// The first line of a /proc file; "" when it cannot be read (the process is gone).
inline std::string ReadProcLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Field `n` (1-based, as in proc(5)) of a /proc stat line; the command may hold spaces, so
// counting starts after its closing parenthesis (field 2).
inline std::string StatField(const std::string& stat, int n) {
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= n && rest >> field; ++i) {
  }
  return field;
}

// The numerically named entries of a /proc directory: processes, or a process's threads.
inline std::vector<std::string> NumberedEntries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit)) names.push_back(name);
  }
  return names;
}

// A whole /proc file, NULs and all (cmdline, environ).
inline std::string ReadProcFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct WorkerChild {
  std::string pid;
  bool fork_server = false;  // traind-worker --fork-server (supervise/fork_server.h)
};

inline std::vector<WorkerChild> WorkerChildren() {
  std::vector<WorkerChild> children;
  for (const std::string& pid : NumberedEntries("/proc")) {
    const std::string stat = ReadProcLine("/proc/" + pid + "/stat");
    if (stat.find("(traind-worker)") == std::string::npos) continue;
    if (std::stoi(StatField(stat, 4)) != getpid()) continue;
    const std::string arguments = ReadProcFile("/proc/" + pid + "/cmdline");
    children.push_back({pid, arguments.find(kForkServerFlag) != std::string::npos});
  }
  return children;
}

}  // namespace traind

#endif  // TRAIND_TESTS_WORKER_CHILDREN_H_
