#include "worker/priority.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace traind {
namespace {

// The thread ids in /proc/self/task; none where there is no /proc.
std::vector<id_t> ThreadsOfThisProcess() {
  std::vector<id_t> threads;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", error)) {
    int tid = 0;
    if (absl::SimpleAtoi(entry.path().filename().string(), &tid)) threads.push_back(tid);
  }
  return threads;
}

// A thread that has ended meanwhile is not an error.
absl::Status LowerThread(id_t tid, int target) {
  if (setpriority(PRIO_PROCESS, tid, target) == 0 || errno == ESRCH) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("setpriority(thread ", tid, ", ", target, "): ", std::strerror(errno)));
}

}  // namespace

absl::Status LowerPriorityFromEnvironment() {
  const char* value = std::getenv("TRAIND_WORKER_NICE");
  if (value == nullptr || *value == '\0') return absl::OkStatus();
  int increment = 0;
  if (!absl::SimpleAtoi(value, &increment) || increment < 0 || increment > 19) {
    return absl::InvalidArgumentError(
        absl::StrCat("TRAIND_WORKER_NICE: expected 0 to 19, got '", value, "'"));
  }
  if (increment == 0) return absl::OkStatus();
  const int target = std::min(19, CurrentNice() + increment);
  // Every thread the process has: LibTorch's static initialisers start some before main().
  // Threads started from then on inherit the value from their (lowered) creators; another pass
  // finds any that a creator started while one ran. Without /proc: this thread alone.
  std::vector<id_t> threads = ThreadsOfThisProcess();
  if (threads.empty()) return LowerThread(0, target);
  for (int pass = 0; pass < 5 && !threads.empty(); ++pass) {
    bool changed = false;
    for (id_t tid : threads) {
      errno = 0;
      const int nice = getpriority(PRIO_PROCESS, tid);
      if (errno != 0 || nice >= target) continue;  // gone, or already low enough
      RETURN_IF_ERROR(LowerThread(tid, target));
      changed = true;
    }
    if (!changed) break;
    threads = ThreadsOfThisProcess();
  }
  return absl::OkStatus();
}

int CurrentNice() {
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, 0);  // -1 is also a valid value: errno tells
  return errno == 0 ? nice : 0;
}

}  // namespace traind
