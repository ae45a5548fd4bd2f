// The Trainer service's handlers for jobs: submit, retry, read, list, watch, cancel, reorder,
// delete.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/job_spec.h"
#include "common/status_macros.h"
#include "server/job_files.h"
#include "server/job_fold.h"
#include "server/list_pages.h"
#include "server/storage_quota.h"
#include "server/trainer_service.h"
#include "server/trainer_service_offload.h"
#include "server/watch_reactor.h"

namespace traind {

using trainer::v1::Job;

namespace {
constexpr int kDefaultEventPage = 1000;
constexpr int kMaxEventPage = 10000;
// A deleted job's freed pages go back in batches of 8 MiB (retention's), up to 1 GiB per delete.
constexpr int kCompactPages = 2048;
constexpr int kCompactBatches = 128;

// A WatchJob refused before it starts (authentication, limits).
class RejectedWatch : public grpc::ServerWriteReactor<trainer::v1::JobEvent> {
 public:
  explicit RejectedWatch(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};
}  // namespace

absl::Status TrainerService::Submit(const trainer::v1::SubmitJobRequest& request,
                                    const Caller& caller, Job* response) {
  Job job;
  job.set_owner(caller.owner);
  ASSIGN_OR_RETURN(*job.mutable_spec(), admission_->PrepareSpec(request.spec(), caller));
  job.set_priority(request.priority());
  for (int64_t after : request.after()) {
    RETURN_IF_ERROR(admission_->CheckDependency(caller, after));
    job.add_after(after);
  }
  if (request.idempotency_key().size() > 256) {
    return absl::InvalidArgumentError("idempotency_key: at most 256 characters");
  }
  job.set_idempotency_key(request.idempotency_key());
  // Benchmarks run alone by default: a neighbour would distort the timing they exist for.
  job.set_exclusive(request.has_exclusive() ? request.exclusive() : job.spec().has_benchmark());
  bool existed = false;
  ASSIGN_OR_RETURN(*response, store_->CreateJob(job, &existed, QueueLimitFor(caller)));
  if (!existed) scheduler_->Wake();  // the store told the hub (watchers) itself
  return absl::OkStatus();
}

absl::Status TrainerService::Retry(const trainer::v1::RetryJobRequest& request,
                                   const Caller& caller, Job* response) {
  ASSIGN_OR_RETURN(Job old, admission_->OwnJob(caller, request.id()));
  if (!IsTerminal(old.state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", old.id(), " is still ", Job::State_Name(old.state())));
  }
  Job job;
  // Admitted again, as a new submission would be: its files, roots and uploads may have changed
  // (and a retry with changes names a spec of its own).
  ASSIGN_OR_RETURN(
      *job.mutable_spec(),
      admission_->PrepareSpec(request.has_spec() ? request.spec() : old.spec(), caller));
  for (int64_t after : old.after()) {  // it waits for what the original waited for
    RETURN_IF_ERROR(admission_->CheckDependency(caller, after));
    job.add_after(after);
  }
  job.set_priority(old.priority());
  job.set_exclusive(old.exclusive());
  job.set_retry_of(old.id());
  job.set_owner(caller.owner);
  ASSIGN_OR_RETURN(*response, store_->CreateJob(job, nullptr, QueueLimitFor(caller)));
  scheduler_->Wake();
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* TrainerService::SubmitJob(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::SubmitJobRequest, Job>(
      context, "SubmitJob", request, response,
      [this](const trainer::v1::SubmitJobRequest* request, Job* response, const Caller& caller) {
        return Submit(*request, caller, response);
      });
}

grpc::ServerUnaryReactor* TrainerService::GetJob(grpc::CallbackServerContext* context,
                                                 const trainer::v1::GetJobRequest* request,
                                                 Job* response) {
  return Offload(context, "GetJob", request,
                 [this, request, response](const Caller& caller) -> absl::Status {
                   ASSIGN_OR_RETURN(*response, admission_->OwnJob(caller, request->id()));
                   FillDiskBytes(*store_, files_.jobs_dir, {response});
                   return absl::OkStatus();
                 });
}

absl::Status TrainerService::List(const trainer::v1::ListJobsRequest& request, const Caller& caller,
                                  trainer::v1::ListJobsResponse* response) {
  ASSIGN_OR_RETURN(const int page_size, PageSize(request.page_size()));
  ASSIGN_OR_RETURN(const int64_t before_id, PageStart(request.page_token(), "ListJobs"));
  Store::JobFilter filter;
  for (int state : request.states()) {
    if (!Job::State_IsValid(state) || state == Job::STATE_UNSPECIFIED) {
      return absl::InvalidArgumentError(absl::StrCat("states: unknown state ", state));
    }
    filter.states.push_back(static_cast<Job::State>(state));
  }
  filter.sweep_id = request.sweep_id();
  filter.model = request.model();
  filter.device = request.device() == "cuda" ? "cuda:0" : request.device();
  if (!caller.is_admin()) filter.owner = caller.owner;
  ASSIGN_OR_RETURN(std::vector<Job> jobs, store_->ListJobs(filter, before_id, page_size + 1));
  const bool more = static_cast<int>(jobs.size()) > page_size;
  if (more) jobs.resize(page_size);
  std::vector<Job*> listed;
  for (Job& job : jobs) listed.push_back(&job);
  FillDiskBytes(*store_, files_.jobs_dir, listed);
  size_t reply_bytes = 0;
  for (Job& job : jobs) {
    // The page ends early rather than outgrow what any client accepts by default.
    reply_bytes += job.ByteSizeLong() + 8;
    if (response->jobs_size() > 0 && reply_bytes > kMaxReplyBytes) break;
    *response->add_jobs() = std::move(job);
  }
  if (more || response->jobs_size() < static_cast<int>(jobs.size())) {
    response->set_next_page_token(absl::StrCat(response->jobs().rbegin()->id()));
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* TrainerService::ListJobs(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::ListJobsRequest, trainer::v1::ListJobsResponse>(
      context, "ListJobs", request, response,
      [this](const trainer::v1::ListJobsRequest* request, trainer::v1::ListJobsResponse* response,
             const Caller& caller) { return List(*request, caller, response); });
}

grpc::ServerUnaryReactor* TrainerService::CancelJob(grpc::CallbackServerContext* context,
                                                    const trainer::v1::CancelJobRequest* request,
                                                    Job* response) {
  return Offload(context, "CancelJob", request,
                 [this, request, response](const Caller& caller) -> absl::Status {
                   RETURN_IF_ERROR(admission_->OwnJob(caller, request->id()).status());
                   ASSIGN_OR_RETURN(*response, scheduler_->Cancel(request->id()));
                   return absl::OkStatus();
                 });
}

grpc::ServerUnaryReactor* TrainerService::SetJobPriority(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request,
                                                         grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::SetJobPriorityRequest, Job>(
      context, "SetJobPriority", request, response,
      [this](const trainer::v1::SetJobPriorityRequest* request, Job* response,
             const Caller& caller) -> absl::Status {
        RETURN_IF_ERROR(admission_->OwnJob(caller, request->id()).status());
        ASSIGN_OR_RETURN(*response, store_->SetPriority(request->id(), request->priority()));
        scheduler_->Wake();  // the new order may start it now
        return absl::OkStatus();
      });
}

grpc::ServerWriteReactor<trainer::v1::JobEvent>* TrainerService::WatchJob(
    grpc::CallbackServerContext* context, const trainer::v1::WatchJobRequest* request) {
  absl::StatusOr<Caller> caller = access_->Admit(*context, "WatchJob", request);
  if (!caller.ok()) return new RejectedWatch(ToGrpcStatus(caller.status()));
  absl::StatusOr<std::unique_ptr<AccessControl::WatchLease>> lease = access_->AcquireWatch(*caller);
  if (!lease.ok()) return new RejectedWatch(ToGrpcStatus(lease.status()));
  return WatchReactor::Start(store_, hub_, executor_, request->id(), request->from_seq(),
                             *std::move(lease), [caller = *caller](const Job& job) {
                               return caller.MayActFor(job.owner())
                                          ? absl::OkStatus()
                                          : NotYours(caller, absl::StrCat("job ", job.id()));
                             });
}

grpc::ServerUnaryReactor* TrainerService::ListJobEvents(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* request,
                                                        grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::ListJobEventsRequest, trainer::v1::ListJobEventsResponse>(
      context, "ListJobEvents", request, response,
      [this](const trainer::v1::ListJobEventsRequest* request,
             trainer::v1::ListJobEventsResponse* response, const Caller& caller) -> absl::Status {
        const int page_size = request->page_size() == 0 ? kDefaultEventPage : request->page_size();
        if (page_size < 0 || page_size > kMaxEventPage) {
          return absl::InvalidArgumentError(absl::StrCat("page_size: must be between 1 and ",
                                                         kMaxEventPage, ", got ", page_size));
        }
        ASSIGN_OR_RETURN(Job job, admission_->OwnJob(caller, request->id()));
        const int64_t from_seq = std::max<int64_t>(request->from_seq(), 1);
        ASSIGN_OR_RETURN(std::vector<trainer::v1::JobEvent> events,
                         store_->ReadEvents(job.id(), from_seq, page_size));
        size_t reply_bytes = 0;
        for (auto& event : events) {
          reply_bytes += event.ByteSizeLong() + 8;
          if (response->events_size() > 0 && reply_bytes > kMaxReplyBytes) break;
          *response->add_events() = std::move(event);
        }
        const int64_t last = response->events().empty() ? 0 : response->events().rbegin()->seq();
        const bool cut = response->events_size() < static_cast<int>(events.size());
        if (cut || (static_cast<int>(events.size()) == page_size && last < job.last_seq())) {
          response->set_next_seq(last + 1);
        }
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* TrainerService::RetryJob(grpc::CallbackServerContext* context,
                                                   const trainer::v1::RetryJobRequest* request,
                                                   Job* response) {
  return Offload(context, "RetryJob", request, [this, request, response](const Caller& caller) {
    return Retry(*request, caller, response);
  });
}

grpc::ServerUnaryReactor* TrainerService::DeleteJob(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::DeleteJobRequest, trainer::v1::DeleteJobResponse>(
      context, "DeleteJob", request, response,
      [this](const trainer::v1::DeleteJobRequest* request, trainer::v1::DeleteJobResponse* response,
             const Caller& caller) -> absl::Status {
        ASSIGN_OR_RETURN(Job job, admission_->OwnJob(caller, request->id()));
        FillDiskBytes(*store_, files_.jobs_dir, {&job});
        const int64_t bytes = job.disk_bytes();  // its files and its events
        ASSIGN_OR_RETURN(std::vector<std::string> unused,
                         store_->DeleteJob(request->id(), request->force()));
        // The job is gone from the store (committed); its files follow. A crash in between leaves
        // files no job names, never a job without its files.
        response->set_id(request->id());
        int64_t freed = bytes;
        RETURN_IF_ERROR(RemoveJobFiles(files_.jobs_dir, request->id()));
        for (const std::string& digest : unused) {
          absl::StatusOr<trainer::v1::Blob> blob = files_.blobs->Get(digest);
          ASSIGN_OR_RETURN(const bool removed, files_.blobs->Release(digest, job.owner()));
          if (!removed) continue;  // another token uploaded it too: theirs stays
          if (blob.ok()) freed += blob->size_bytes();
          response->add_removed_blobs(digest);
        }
        response->set_freed_bytes(freed);
        // Its events' pages back to the file system, a batch at a time so that other calls
        // interleave (the database and its WAL shrink as retention's do).
        for (int batch = 0; batch < kCompactBatches; ++batch) {
          absl::StatusOr<int64_t> free_pages = store_->FreePages();
          if (!free_pages.ok() || *free_pages == 0) break;
          RETURN_IF_ERROR(store_->Compact(kCompactPages));
        }
        return absl::OkStatus();
      });
}

}  // namespace traind
