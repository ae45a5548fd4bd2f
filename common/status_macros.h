// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status, which the packaged Abseil lacks.
#ifndef TRAIND_COMMON_STATUS_MACROS_H_
#define TRAIND_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TRAIND_CONCAT_INNER(a, b) a##b
#define TRAIND_CONCAT(a, b) TRAIND_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::absl::Status _traind_status = (expr);          \
    if (!_traind_status.ok()) return _traind_status; \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(TRAIND_CONCAT(_traind_statusor_, __LINE__), lhs, expr)

#define ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                          \
  if (!statusor.ok()) return statusor.status();    \
  lhs = std::move(statusor).value()

#endif  // TRAIND_COMMON_STATUS_MACROS_H_
