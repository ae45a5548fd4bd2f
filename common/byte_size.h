// A size in bytes as people write it on a command line: "16GiB", "512MiB", "1.5GiB" is not one
// (whole numbers only), "4096" is bytes. Units are powers of 1024 whatever their spelling
// (k, kb, ki, kib; m...; g...; t...), case-insensitive, with or without a space before them.
#ifndef TRAIND_COMMON_BYTE_SIZE_H_
#define TRAIND_COMMON_BYTE_SIZE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace traind {

// INVALID_ARGUMENT, saying what is accepted, for a negative, fractional or unknown size and for
// one above the largest int64_t.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);

}  // namespace traind

#endif  // TRAIND_COMMON_BYTE_SIZE_H_
