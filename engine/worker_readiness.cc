#include "engine/worker_readiness.h"

#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace traind {
namespace {

std::optional<WorkerReadiness>& Noted() {
  static std::optional<WorkerReadiness> noted;
  return noted;
}

}  // namespace

std::optional<double> ProcessAgeSeconds() {
#ifdef __linux__
  // /proc/self/stat's 22nd field: the start time in clock ticks since boot. The command name
  // (field 2) may hold spaces, so the fields are counted after its closing parenthesis.
  std::ifstream file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i < 22) continue;
    const long ticks_per_second = sysconf(_SC_CLK_TCK);
    timespec now{};
    if (ticks_per_second <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return std::nullopt;
    const double started =
        std::strtod(field.c_str(), nullptr) / static_cast<double>(ticks_per_second);
    return static_cast<double>(now.tv_sec) + now.tv_nsec / 1e9 - started;
  }
#endif
  return std::nullopt;
}

void NoteWorkerReadiness(const WorkerReadiness& readiness) { Noted() = readiness; }

std::optional<WorkerReadiness> NotedWorkerReadiness() { return Noted(); }

}  // namespace traind
