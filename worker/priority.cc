#include "worker/priority.h"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace traind {

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
  // Threads started from then on inherit the value from their (lowered) creators; a second pass
  // finds any that a creator started while the first pass ran.
  for (int pass = 0; pass < 5; ++pass) {
    DIR* tasks = opendir("/proc/self/task");
    if (tasks == nullptr) {  // no /proc: this thread, whose later threads inherit it
      if (setpriority(PRIO_PROCESS, 0, target) != 0) {
        return absl::InternalError(
            absl::StrCat("setpriority(", target, "): ", std::strerror(errno)));
      }
      return absl::OkStatus();
    }
    bool changed = false;
    absl::Status failed;
    while (dirent* entry = readdir(tasks)) {
      int tid = 0;
      if (!absl::SimpleAtoi(entry->d_name, &tid)) continue;  // "." and ".."
      errno = 0;
      const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
      if (errno != 0 || nice >= target) continue;  // gone, or already low enough
      if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), target) != 0) {
        if (errno != ESRCH) {
          failed = absl::InternalError(absl::StrCat("setpriority(thread ", tid, ", ", target,
                                                    "): ", std::strerror(errno)));
        }
        continue;
      }
      changed = true;
    }
    closedir(tasks);
    if (!failed.ok()) return failed;
    if (!changed) break;
  }
  return absl::OkStatus();
}

int CurrentNice() {
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, 0);  // -1 is also a valid value: errno tells
  return errno == 0 ? nice : 0;
}

}  // namespace traind
