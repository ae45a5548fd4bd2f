#include "client/sweep_members.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

grpc::Status ResolveSweep(trainer::v1::Trainer::Stub& stub, const std::string& id_or_name,
                          int64_t* id) {
  if (absl::SimpleAtoi(id_or_name, id) && *id > 0) return grpc::Status::OK;
  if (id_or_name.empty() || absl::ascii_isdigit(id_or_name[0]) || id_or_name[0] == '-') {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("sweep: '", id_or_name, "' is neither an id nor a name"));
  }
  trainer::v1::ListSweepsRequest request;
  request.set_name(id_or_name);
  request.set_page_size(20);
  trainer::v1::ListSweepsResponse response;
  auto call = UnaryCall();
  if (grpc::Status status = stub.ListSweeps(call.get(), request, &response); !status.ok()) {
    return status;
  }
  if (response.sweeps().empty()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("no sweep is named '", id_or_name,
                                     "' (`trainctl sweeps` lists them, with their ids)"));
  }
  if (response.sweeps_size() > 1) {
    std::vector<int64_t> ids;
    for (const auto& sweep : response.sweeps()) ids.push_back(sweep.id());
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat(response.sweeps_size(), response.next_page_token().empty() ? "" : "+",
                     " sweeps are named '", id_or_name,
                     "': give one by its id: ", absl::StrJoin(ids, ", ")));
  }
  *id = response.sweeps(0).id();
  return grpc::Status::OK;
}

grpc::Status SweepGrows(trainer::v1::Trainer::Stub& stub, int64_t sweep_id, bool* grows) {
  trainer::v1::GetSweepRequest request;
  request.set_id(sweep_id);
  trainer::v1::Sweep sweep;
  auto call = UnaryCall();
  const grpc::Status status = stub.GetSweep(call.get(), request, &sweep);
  *grows = status.ok() && sweep.spec().has_search() && !sweep.search_done();
  return status;
}

}  // namespace traind
