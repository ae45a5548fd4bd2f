// Bounds on every string, bytes and repeated field of a request, checked by reflection before any
// work is done: a field nobody listed still gets the default bound, so a new field cannot arrive
// unbounded. (A SubmitJob whose `after` held 1.2 million ids stalled the scheduler for minutes.)
#ifndef TRAIND_COMMON_MESSAGE_BOUNDS_H_
#define TRAIND_COMMON_MESSAGE_BOUNDS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace traind {

inline constexpr size_t kDefaultMaxStringBytes = 256;
inline constexpr size_t kDefaultMaxRepeated = 64;

// INVALID_ARGUMENT naming the field's path (e.g. "spec.configs[3].name"), its bound and its size
// for the first field of `message` (recursively) that exceeds its bound. The bounds are those of
// the field's name: see message_bounds.cc's table; everything else gets the defaults above.
absl::Status CheckMessageBounds(const google::protobuf::Message& message);

}  // namespace traind

#endif  // TRAIND_COMMON_MESSAGE_BOUNDS_H_
