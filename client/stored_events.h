// A job's stored events, read a page of ListJobEvents at a time (`trainctl logs`, `export`).
#ifndef TRAIND_CLIENT_STORED_EVENTS_H_
#define TRAIND_CLIENT_STORED_EVENTS_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>

#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {

// Calls `each` with every event of job `id` stored so far, in seq order; the first failed call's
// status, or OK.
grpc::Status ForEachStoredEvent(trainer::v1::Trainer::Stub& stub, int64_t id,
                                const std::function<void(const trainer::v1::JobEvent&)>& each);

}  // namespace traind

#endif  // TRAIND_CLIENT_STORED_EVENTS_H_
