#include "client/stored_events.h"

#include "client/rpc.h"

namespace traind {

grpc::Status ForEachStoredEvent(trainer::v1::Trainer::Stub& stub, int64_t id,
                                const std::function<void(const trainer::v1::JobEvent&)>& each) {
  int64_t from_seq = 1;
  do {
    trainer::v1::ListJobEventsRequest request;
    request.set_id(id);
    request.set_from_seq(from_seq);
    trainer::v1::ListJobEventsResponse response;
    auto call = UnaryCall();
    grpc::Status status = stub.ListJobEvents(call.get(), request, &response);
    if (!status.ok()) return status;
    for (const auto& event : response.events()) each(event);
    from_seq = response.next_seq();
  } while (from_seq > 0);
  return grpc::Status::OK;
}

}  // namespace traind
