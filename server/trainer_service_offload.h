// The definitions of TrainerService's Offload templates, which every file of handlers
// (trainer_service*.cc) instantiates. Include only there.
#ifndef TRAIND_SERVER_TRAINER_SERVICE_OFFLOAD_H_
#define TRAIND_SERVER_TRAINER_SERVICE_OFFLOAD_H_

#include <memory>
#include <type_traits>
#include <utility>

#include "common/grpc_status.h"
#include "server/trainer_service.h"

namespace traind {

template <typename Work>
grpc::ServerUnaryReactor* TrainerService::Offload(grpc::CallbackServerContext* context,
                                                  const char* method,
                                                  const google::protobuf::Message* request,
                                                  Work work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<Caller> caller = access_->Admit(*context, method, request);  // no I/O
  if (!caller.ok()) {
    reactor->Finish(ToGrpcStatus(caller.status()));
    return reactor;
  }
  executor_->Schedule([reactor, caller = *std::move(caller), work = std::move(work)]() mutable {
    if constexpr (std::is_invocable_v<Work&, const Caller&>) {
      reactor->Finish(ToGrpcStatus(work(caller)));
    } else {
      reactor->Finish(ToGrpcStatus(work()));
    }
  });
  return reactor;
}

template <typename Request, typename Reply, typename Work>
grpc::ServerUnaryReactor* TrainerService::OffloadChecked(grpc::CallbackServerContext* context,
                                                         const char* method,
                                                         const grpc::ByteBuffer* request_bytes,
                                                         grpc::ByteBuffer* reply_bytes, Work work) {
  // Who calls first (a caller without a valid token learns nothing about its request's fields,
  // and costs no parse); then the bytes; then Offload admits again with the request's bounds.
  if (absl::StatusOr<Caller> caller = access_->Admit(*context, method, nullptr); !caller.ok()) {
    return FinishNow(context, caller.status());
  }
  auto call = std::make_shared<CheckedCall<Request, Reply>>(reply_bytes);
  if (absl::Status parsed = call->Parse(*request_bytes); !parsed.ok()) {
    return FinishNow(context, parsed);
  }
  return Offload(context, method, call->request(),
                 [call, work = std::move(work)](const Caller& caller) mutable {
                   return call->Seal(work(call->request(), call->reply(), caller));
                 });
}

}  // namespace traind

#endif  // TRAIND_SERVER_TRAINER_SERVICE_OFFLOAD_H_
