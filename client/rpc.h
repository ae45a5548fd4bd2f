// A ClientContext with trainctl's defaults: a deadline for unary calls, fail fast when the daemon
// is down.
#ifndef TRAIND_CLIENT_RPC_H_
#define TRAIND_CLIENT_RPC_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>

namespace traind {

inline std::unique_ptr<grpc::ClientContext> UnaryCall() {
  auto call = std::make_unique<grpc::ClientContext>();
  call->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return call;
}

}  // namespace traind

#endif  // TRAIND_CLIENT_RPC_H_
