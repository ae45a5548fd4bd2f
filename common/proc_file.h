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
};
// Nothing when the process is gone (reaped) or the line cannot be read.
std::optional<ProcStat> ReadProcStat(pid_t pid);

}  // namespace traind

#endif  // TRAIND_COMMON_PROC_FILE_H_
