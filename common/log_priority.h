// Priorities on traind's log lines where journald reads them. Under systemd, stderr is a stream to
// journald (systemd names it in JOURNAL_STREAM=DEVICE:INODE), which reads a leading "<N>" as the
// line's syslog priority: `journalctl -u traind -p warning` then shows warnings and errors only.
// On a terminal or in a file the lines stay as they are.
//   LogAt(LogPriority::kWarning) << "traind: WARNING: ...\n";
// Lines about a job say "traind: job ID: ...", so `journalctl -u traind --grep 'job 12:'` follows
// one.
#ifndef TRAIND_COMMON_LOG_PRIORITY_H_
#define TRAIND_COMMON_LOG_PRIORITY_H_

#include <ostream>
#include <string>

namespace traind {

enum class LogPriority { kError = 3, kWarning = 4, kNotice = 5, kInfo = 6 };

// "<4>" where stderr is journald's stream, "" otherwise (decided once, at the first call).
std::string PriorityPrefix(LogPriority priority);

// std::cerr, after the prefix: one line per call.
std::ostream& LogAt(LogPriority priority);

}  // namespace traind

#endif  // TRAIND_COMMON_LOG_PRIORITY_H_
