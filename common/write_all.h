// Writes every byte to a file descriptor, retrying short writes and EINTR. Shared by the daemon
// (the request it pipes to a worker) and trainctl (downloads).
#ifndef TRAIND_COMMON_WRITE_ALL_H_
#define TRAIND_COMMON_WRITE_ALL_H_

#include "absl/strings/string_view.h"

namespace traind {

// False (errno says why) if a write failed before every byte was written.
bool WriteAll(int fd, absl::string_view bytes);

}  // namespace traind

#endif  // TRAIND_COMMON_WRITE_ALL_H_
