// A sweep's members as traind lists them, every page read: for the verbs that act on or follow a
// whole sweep (`watch --sweep`, `cancel --sweep`, `wait --sweep`).
#ifndef TRAIND_CLIENT_SWEEP_MEMBERS_H_
#define TRAIND_CLIENT_SWEEP_MEMBERS_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <vector>

#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {

// Sweep `sweep_id`'s members in `states` (empty: all), oldest (first queued) first, into
// `*members`. A sweep with no member in those states is checked to exist: NOT_FOUND if it does
// not, so that a wrong id is never taken for a finished sweep.
grpc::Status ListSweepMembers(trainer::v1::Trainer::Stub& stub, int64_t sweep_id,
                              const std::vector<trainer::v1::Job::State>& states,
                              std::vector<trainer::v1::Job>* members);

}  // namespace traind

#endif  // TRAIND_CLIENT_SWEEP_MEMBERS_H_
