#include "common/proc_file.h"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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
  long parent = 0, group = 0, session = 0;           // NOLINT(runtime/int): sscanf's %ld
  unsigned long long user = 0, system = 0;           // NOLINT(runtime/int): sscanf's %llu
  long long children_user = 0, children_system = 0;  // NOLINT(runtime/int)
  unsigned long long start = 0;                      // NOLINT(runtime/int)
  // state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime
  // cstime priority nice num_threads itrealvalue starttime (proc(5)).
  const int read = std::sscanf(text.c_str() + close + 1,
                               " %c %ld %ld %ld %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld "
                               "%*d %*d %*d %*d %llu",
                               &fields.state, &parent, &group, &session, &user, &system,
                               &children_user, &children_system, &start);
  if (read < 4) return std::nullopt;
  if (read >= 8) {
    fields.cpu_ticks = user + system;
    fields.children_cpu_ticks =
        static_cast<uint64_t>(std::max(0LL, children_user + children_system));
  }
  if (read == 9) fields.start_ticks = start;
  fields.parent = static_cast<pid_t>(parent);
  fields.process_group = static_cast<pid_t>(group);
  fields.session = static_cast<pid_t>(session);
  return fields;
}

double SessionCpuSeconds(pid_t session) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  uint64_t ticks = 0;
  while (const dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);  // NOLINT(runtime/int)
    if (pid <= 0 || *end != '\0') continue;
    const std::optional<ProcStat> stat = ReadProcStat(static_cast<pid_t>(pid));
    if (stat && stat->session == session) ticks += stat->cpu_ticks + stat->children_cpu_ticks;
  }
  closedir(proc);
  const long per_second = sysconf(_SC_CLK_TCK);  // NOLINT(runtime/int)
  return per_second > 0 ? static_cast<double>(ticks) / static_cast<double>(per_second) : 0;
}

std::optional<double> ProcessAgeSeconds() {
#ifdef __linux__
  const std::optional<ProcStat> stat = ReadProcStat(getpid());
  const long per_second = sysconf(_SC_CLK_TCK);  // NOLINT(runtime/int)
  timespec now{};
  if (!stat || stat->start_ticks == 0 || per_second <= 0 ||
      clock_gettime(CLOCK_BOOTTIME, &now) != 0) {
    return std::nullopt;
  }
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9 -
         static_cast<double>(stat->start_ticks) / static_cast<double>(per_second);
#else
  return std::nullopt;
#endif
}

std::optional<HostMemory> ReadHostMemory() {
  const int64_t total = ProcKilobytes("/proc/meminfo", "MemTotal");
  const int64_t available = ProcKilobytes("/proc/meminfo", "MemAvailable");
  if (total <= 0 || available <= 0 || available > total) return std::nullopt;
  return HostMemory{total - available, total};
}

}  // namespace traind
