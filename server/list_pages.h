// How a List call pages: its page size and page token, read the same way by every List RPC
// (ListJobs, ListSweeps), and how large a reply may grow.
#ifndef TRAIND_SERVER_LIST_PAGES_H_
#define TRAIND_SERVER_LIST_PAGES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace traind {

inline constexpr int kDefaultPageSize = 100;
inline constexpr int kMaxPageSize = 1000;
// Replies stay under the 4 MiB that gRPC clients accept by default, whatever the page size asked.
inline constexpr size_t kMaxReplyBytes = 3 << 20;

// The page size asked (0: the default), or INVALID_ARGUMENT.
inline absl::StatusOr<int> PageSize(int asked) {
  if (asked == 0) return kDefaultPageSize;
  if (asked < 0 || asked > kMaxPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: must be between 1 and ", kMaxPageSize, ", got ", asked));
  }
  return asked;
}

// The id a page token holds (the page starts below it; 0 for the first page), or
// INVALID_ARGUMENT naming `method`.
inline absl::StatusOr<int64_t> PageStart(const std::string& token, const char* method) {
  int64_t before_id = 0;
  if (!token.empty() && (!absl::SimpleAtoi(token, &before_id) || before_id <= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token: not a token from a previous ", method));
  }
  return before_id;
}

}  // namespace traind

#endif  // TRAIND_SERVER_LIST_PAGES_H_
