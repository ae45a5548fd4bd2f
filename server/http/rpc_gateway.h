// RpcGateway: the dashboard's way into the Trainer service. Every call goes over an in-process
// gRPC channel to the same service the gRPC listeners serve, carrying the HTTP caller's identity
// (its bearer token, or the local-session secret), so validation, ownership and access control
// are the service's own: there is no second implementation of any of them here.
//   POST /api/v1/SubmitJob {"spec": {...}}  ->  CallJson(identity, "SubmitJob", body)
// Requests and replies are protobuf's JSON mapping (lowerCamelCase names, int64 as strings, enums
// by name). Thread-safe.
#ifndef TRAIND_SERVER_HTTP_RPC_GATEWAY_H_
#define TRAIND_SERVER_HTTP_RPC_GATEWAY_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "server/http/http_sessions.h"
#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {

struct JsonReply {
  int http_status = 200;
  std::string body;  // JSON: the reply message, or {"code": "...", "message": "..."}
};

class RpcGateway {
 public:
  RpcGateway(std::shared_ptr<grpc::Channel> channel, std::string local_session_secret);

  // Calls the unary Trainer method `method` (e.g. "ListJobs") with `json_request` for `who`.
  // 404 for a name that is not a unary method of the service (streams have their own routes).
  JsonReply CallJson(const HttpIdentity& who, const std::string& method,
                     const std::string& json_request);

  // A context for a call made for `who` (its credentials added).
  std::unique_ptr<grpc::ClientContext> ContextFor(const HttpIdentity& who) const;
  trainer::v1::Trainer::Stub& stub() { return *stub_; }

  // HTTP status for a gRPC status code (INVALID_ARGUMENT 400, UNAUTHENTICATED 401, ...).
  static int HttpStatusOf(grpc::StatusCode code);
  // {"code": "INVALID_ARGUMENT", "message": "..."}
  static std::string ErrorJson(const grpc::Status& status);
  // `text` as a JSON string literal, quotes included.
  static std::string JsonQuote(const std::string& text);
  // The reply message's JSON (every field, defaults too, so pages need not guess).
  static std::string ToJson(const google::protobuf::Message& message);

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<trainer::v1::Trainer::Stub> stub_;
  grpc::GenericStub generic_;
  const std::string local_session_secret_;
};

}  // namespace traind

#endif  // TRAIND_SERVER_HTTP_RPC_GATEWAY_H_
