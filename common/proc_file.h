// Reading Linux's /proc files (elsewhere they are absent and the readers return 0).
#ifndef TRAIND_COMMON_PROC_FILE_H_
#define TRAIND_COMMON_PROC_FILE_H_

#include <cstdint>
#include <string>

namespace traind {

// A "Key:   123 kB" line of a /proc file (/proc/meminfo, /proc/self/status), in bytes; 0 when
// the file or the key is absent.
int64_t ProcKilobytes(const char* file, const std::string& key);

}  // namespace traind

#endif  // TRAIND_COMMON_PROC_FILE_H_
