// A sweep named by its id or its name, and its members as traind lists them, every page read:
// for the verbs that act on or follow a whole sweep (`report`, `watch --sweep`, `cancel --sweep`,
// `wait --sweep`, `export --sweep`, `list --sweep`).
#ifndef TRAIND_CLIENT_SWEEP_MEMBERS_H_
#define TRAIND_CLIENT_SWEEP_MEMBERS_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {

// Sweep `sweep_id`'s members in `states` (empty: all), oldest (first queued) first, into
// `*members`. A sweep with no member in those states is checked to exist: NOT_FOUND if it does
// not, so that a wrong id is never taken for a finished sweep.
grpc::Status ListSweepMembers(trainer::v1::Trainer::Stub& stub, int64_t sweep_id,
                              const std::vector<trainer::v1::Job::State>& states,
                              std::vector<trainer::v1::Job>* members);

// Whether sweep `sweep_id` may still get members: a search that has not ended (its members are
// added as it proposes them). A plain sweep's members are all there from the start.
grpc::Status SweepGrows(trainer::v1::Trainer::Stub& stub, int64_t sweep_id, bool* grows);

// The sweep `id_or_name` names: an id as it is, or the one sweep of that name the caller may see
// (NOT_FOUND when none is; INVALID_ARGUMENT listing the ids when several are).
grpc::Status ResolveSweep(trainer::v1::Trainer::Stub& stub, const std::string& id_or_name,
                          int64_t* id);

}  // namespace traind

#endif  // TRAIND_CLIENT_SWEEP_MEMBERS_H_
