#include "client/sweep_members.h"

#include <algorithm>

#include "client/rpc.h"

namespace traind {

grpc::Status ListSweepMembers(trainer::v1::Trainer::Stub& stub, int64_t sweep_id,
                              const std::vector<trainer::v1::Job::State>& states,
                              std::vector<trainer::v1::Job>* members) {
  members->clear();
  trainer::v1::ListJobsRequest request;
  request.set_sweep_id(sweep_id);
  for (trainer::v1::Job::State state : states) request.add_states(state);
  request.set_page_size(1000);
  do {
    trainer::v1::ListJobsResponse page;
    auto call = UnaryCall();
    grpc::Status status = stub.ListJobs(call.get(), request, &page);
    if (!status.ok()) return status;
    members->insert(members->end(), page.jobs().begin(), page.jobs().end());
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  std::reverse(members->begin(), members->end());  // ListJobs gives the newest first
  if (!members->empty()) return grpc::Status::OK;
  trainer::v1::GetSweepRequest get;
  get.set_id(sweep_id);
  trainer::v1::Sweep sweep;
  auto call = UnaryCall();
  return stub.GetSweep(call.get(), get, &sweep);
}

}  // namespace traind
