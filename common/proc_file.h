// Reading Linux's /proc files (elsewhere they are absent and the readers return 0).
#ifndef TRAIND_COMMON_PROC_FILE_H_
#define TRAIND_COMMON_PROC_FILE_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace traind {

// A "Key:   123 kB" line of a /proc file (/proc/meminfo, /proc/self/status), in bytes; 0 when
// the file or the key is absent.
int64_t ProcKilobytes(const char* file, const std::string& key);

// The fields of /proc/PID/stat that follow the command name (which is in parentheses and may
// itself hold spaces and parentheses): the one place that line is parsed.
struct ProcStat {
  char state = 0;  // R, S, D, Z (a zombie), ...
  pid_t parent = 0;
  pid_t process_group = 0;
  pid_t session = 0;
  // CPU time in clock ticks (sysconf(_SC_CLK_TCK)): its own (user and system), and that of its
  // children it has waited for.
  uint64_t cpu_ticks = 0;
  uint64_t children_cpu_ticks = 0;
  uint64_t start_ticks = 0;  // when it started, in clock ticks since the machine booted
};
// Nothing when the process is gone (reaped) or the line cannot be read.
std::optional<ProcStat> ReadProcStat(pid_t pid);

// Seconds since this process started (its libraries' loading before main() included), from
// ReadProcStat's start time; nullopt off Linux.
std::optional<double> ProcessAgeSeconds();

// The CPU seconds of every live process in session `session` (ReadProcStat's session), with the
// children each has waited for: a program and its DataLoader workers. 0 off Linux.
double SessionCpuSeconds(pid_t session);

// The host's memory: in use (MemTotal - MemAvailable) and all there is; nullopt where
// /proc/meminfo does not tell.
struct HostMemory {
  int64_t used_bytes = 0;
  int64_t total_bytes = 0;
};
std::optional<HostMemory> ReadHostMemory();

}  // namespace traind

#endif  // TRAIND_COMMON_PROC_FILE_H_
