#include "common/log_priority.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace traind {

namespace {

// systemd's own test (sd_journal_stream_fd's users do the same): JOURNAL_STREAM names the device
// and inode of the stream it connected, and stderr is still that stream (not redirected since).
bool StderrIsJournal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  unsigned long long device = 0, inode = 0;
  if (std::sscanf(stream, "%llu:%llu", &device, &inode) != 2) return false;
  struct stat info {};
  if (fstat(2, &info) != 0) return false;
  return static_cast<unsigned long long>(info.st_dev) == device &&
         static_cast<unsigned long long>(info.st_ino) == inode;
}

}  // namespace

std::string PriorityPrefix(LogPriority priority) {
  static const bool journal = StderrIsJournal();
  if (!journal) return "";
  return "<" + std::to_string(static_cast<int>(priority)) + ">";
}

std::ostream& LogAt(LogPriority priority) { return std::cerr << PriorityPrefix(priority); }

}  // namespace traind
