#include "slurm/task_service.h"

#include <openssl/crypto.h>

#include "absl/strings/str_cat.h"

namespace traind {

using trainer::v1::JobEvent;

TaskService::TaskService(trainer::v1::WorkerRequest request, std::string secret, int tasks,
                         SharedEventPipe* events)
    : request_(std::move(request)), secret_(std::move(secret)), tasks_(tasks), events_(events) {}

bool TaskService::Authorized(const grpc::ServerContext& context) const {
  const std::string expected = "Bearer " + secret_;
  auto it = context.client_metadata().find("authorization");
  if (it == context.client_metadata().end() || it->second.size() != expected.size()) return false;
  return CRYPTO_memcmp(it->second.data(), expected.data(), expected.size()) == 0;
}

grpc::Status TaskService::Join(grpc::ServerContext* context,
                               const trainer::v1::JoinRequest* request,
                               trainer::v1::WorkerRequest* response) {
  if (!Authorized(*context)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "not this job's secret");
  }
  if (request->rank() < 0 || request->rank() >= tasks_) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("rank: 0 to ", tasks_ - 1, ", got ", request->rank()));
  }
  *response = request_;
  return grpc::Status::OK;
}

grpc::Status TaskService::Report(grpc::ServerContext* context,
                                 grpc::ServerReader<trainer::v1::TaskReport>* reader,
                                 trainer::v1::TaskReportAck*) {
  if (!Authorized(*context)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "not this job's secret");
  }
  trainer::v1::TaskReport report;
  while (reader->Read(&report)) {
    const int rank = report.rank();
    if (rank < 0 || rank >= tasks_) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("rank: 0 to ", tasks_ - 1, ", got ", rank));
    }
    absl::MutexLock lock(&mu_);
    if (report.has_exit()) {
      ended_[rank] = report.exit();
      continue;
    }
    JobEvent event = report.event();
    if (!events_seen_.Accept(&event, tasks_ > 1 ? absl::StrCat("rank ", rank, ": ") : "")) {
      continue;
    }
    // In order per task: each task's events come through this one stream. traind gone: the
    // launcher is being stopped too.
    events_->Write(event);
  }
  return grpc::Status::OK;
}

bool TaskService::AwaitAllEnded(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithDeadline(absl::Condition(
                            +[](TaskService* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
                              return static_cast<int>(s->ended_.size()) == s->tasks_;
                            },
                            this),
                        deadline);
  return static_cast<int>(ended_.size()) == tasks_;
}

std::map<int, trainer::v1::ProcessExit> TaskService::Ended() {
  absl::MutexLock lock(&mu_);
  return ended_;
}

bool TaskService::GotResult() {
  absl::MutexLock lock(&mu_);
  return events_seen_.got_result();
}

std::string TaskService::FirstError() {
  absl::MutexLock lock(&mu_);
  return events_seen_.first_error();
}

}  // namespace traind
