// What the dashboard's handlers reply with when a call fails: the gRPC status as its HTTP status
// and the JSON error body the RPC gateway sends (server/http/rpc_gateway.h). Shared by the
// dashboard's pages (dashboard_server.cc) and its streams (dashboard_streams.cc).
#ifndef TRAIND_SERVER_HTTP_HTTP_REPLIES_H_
#define TRAIND_SERVER_HTTP_HTTP_REPLIES_H_

#include <httplib.h>

#include "absl/status/status.h"
#include "common/grpc_status.h"
#include "server/http/rpc_gateway.h"

namespace traind {

inline constexpr const char* kJsonContentType = "application/json";

inline void SendError(httplib::Response& response, const grpc::Status& status) {
  response.status = RpcGateway::HttpStatusOf(status.error_code());
  response.set_content(RpcGateway::ErrorJson(status), kJsonContentType);
}

inline void SendError(httplib::Response& response, const absl::Status& status) {
  SendError(response, ToGrpcStatus(status));
}

}  // namespace traind

#endif  // TRAIND_SERVER_HTTP_HTTP_REPLIES_H_
