// The one place that converts between absl::Status and grpc::Status (STYLE.md rule 5).
#ifndef TRAIND_COMMON_GRPC_STATUS_H_
#define TRAIND_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace traind {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace traind

#endif  // TRAIND_COMMON_GRPC_STATUS_H_
