// The error of a failed system call, as a status: INTERNAL "what: strerror(errno)". Read errno
// before anything else can change it.
#ifndef TRAIND_COMMON_ERRNO_STATUS_H_
#define TRAIND_COMMON_ERRNO_STATUS_H_

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace traind {

inline absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace traind

#endif  // TRAIND_COMMON_ERRNO_STATUS_H_
