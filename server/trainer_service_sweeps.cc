// The Trainer service's handlers for sweeps: submit, read, and the report that compares members.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/spec_fields.h"
#include "common/status_macros.h"
#include "common/sweep_fields.h"
#include "search/asha.h"
#include "server/list_pages.h"
#include "server/search_plan.h"
#include "server/search_report.h"
#include "server/sweep_expansion.h"
#include "server/sweep_report.h"
#include "server/trainer_service.h"
#include "server/trainer_service_offload.h"

namespace traind {

using trainer::v1::Job;
using trainer::v1::JobSpec;

absl::Status TrainerService::CreateSearch(const trainer::v1::SubmitSweepRequest& request,
                                          const Caller& caller, trainer::v1::Sweep* response) {
  if (searches_ == nullptr) return absl::UnimplementedError("this traind runs no searches");
  trainer::v1::SweepSpec spec = request.spec();
  ASSIGN_OR_RETURN(const SearchPlan plan, PlanSearch(spec));
  // Every value a trial may draw is admitted now, as a job's would be: a trial never fails on a
  // rule the search could have been refused by. Each is tried in a trial whose other fields are
  // drawn too (a search over the model has no model in its base).
  JobSpec drawn = spec.base();
  for (const auto& [field, distribution] : plan.space.params) {
    RETURN_IF_ERROR(SetSpecField(&drawn, field, DistributionExtremes(distribution).front()));
  }
  for (const auto& [field, distribution] : plan.space.params) {
    for (const std::string& value : DistributionExtremes(distribution)) {
      JobSpec probe = drawn;
      RETURN_IF_ERROR(SetSpecField(&probe, field, value));
      absl::StatusOr<JobSpec> prepared = admission_->PrepareSpec(probe, caller);
      if (!prepared.ok()) {
        return absl::Status(
            prepared.status().code(),
            absl::StrCat("search.params: ", field, "=", value, ": ", prepared.status().message()));
      }
    }
  }
  // The base as a trial sees it before its draw replaces the searched fields (its model, when
  // the model is searched, is the first choice's).
  ASSIGN_OR_RETURN(*spec.mutable_base(), admission_->PrepareSpec(drawn, caller));
  ASSIGN_OR_RETURN(*response, store_->CreateSearch(spec, caller.owner, SerializeAshaState({})));
  searches_->Wake();
  return absl::OkStatus();
}

absl::Status TrainerService::CreateSweep(const trainer::v1::SubmitSweepRequest& request,
                                         const Caller& caller, trainer::v1::Sweep* response) {
  if (request.spec().has_search()) return CreateSearch(request, caller, response);
  ASSIGN_OR_RETURN(std::vector<JobSpec> specs, ExpandSweep(request.spec()));
  std::vector<Job> members;
  const bool exclusive = request.spec().has_exclusive() ? request.spec().exclusive() : true;
  for (size_t i = 0; i < specs.size(); ++i) {
    absl::StatusOr<JobSpec> prepared = admission_->PrepareSpec(specs[i], caller);
    if (!prepared.ok()) {
      return absl::Status(
          prepared.status().code(),
          absl::StrCat("member ", i + 1, " of ", specs.size(), ": ", prepared.status().message()));
    }
    Job job;
    *job.mutable_spec() = std::move(*prepared);
    job.set_exclusive(exclusive);
    job.set_priority(request.spec().priority());
    job.set_owner(caller.owner);
    members.push_back(std::move(job));
  }
  ASSIGN_OR_RETURN(*response, store_->CreateSweep(request.spec(), members, QueueLimitFor(caller)));
  scheduler_->Wake();
  return absl::OkStatus();
}

absl::Status TrainerService::Report(const trainer::v1::GetSweepReportRequest& request,
                                    const Caller& caller, trainer::v1::SweepReport* response) {
  ASSIGN_OR_RETURN(trainer::v1::Sweep sweep, admission_->OwnSweep(caller, request.id()));
  std::vector<Job> jobs;
  std::map<int64_t, JobTrace> traces;
  for (int64_t id : sweep.job_ids()) {
    ASSIGN_OR_RETURN(Job job, store_->GetJob(id));
    if (job.state() == Job::SUCCEEDED) {
      int64_t from = 1;
      // Wall time counts from when the job first started running: sweep members run one after
      // another, and time spent queued behind the others is not this configuration's.
      std::optional<google::protobuf::Timestamp> started;
      while (true) {
        ASSIGN_OR_RETURN(std::vector<trainer::v1::JobEvent> events,
                         store_->ReadEvents(id, from, 1000));
        for (const auto& e : events) {
          if (e.has_step()) traces[id].steps.push_back(e.step());
          if (!started && e.has_state_change() && e.state_change().state() == Job::RUNNING) {
            started = e.time();
          }
          if (e.has_epoch_summary()) {
            const trainer::v1::EpochSummary& summary = e.epoch_summary();
            if (summary.has_train_loss()) traces[id].final_train_loss = summary.train_loss();
            if (summary.evaluated() && summary.has_validation_accuracy()) {
              const google::protobuf::Timestamp& from_time = started ? *started : job.create_time();
              const double wall = static_cast<double>(e.time().seconds() - from_time.seconds()) +
                                  (e.time().nanos() - from_time.nanos()) / 1e9;
              traces[id].evaluated.push_back(
                  {summary.validation_accuracy(), summary.elapsed_seconds(), wall});
            }
          }
        }
        if (events.size() < 1000) break;
        from = events.back().seq() + 1;
      }
    }
    jobs.push_back(std::move(job));
  }
  SweepReportOptions options;
  const std::string& baseline =
      request.baseline().empty() ? request.baseline_device() : request.baseline();
  if (!baseline.empty()) RETURN_IF_ERROR(ParseBaseline(baseline, &options));
  if (request.accuracy_tolerance() < 0 || request.loss_tolerance() < 0) {
    return absl::InvalidArgumentError("accuracy_tolerance, loss_tolerance: must be 0 or more");
  }
  if (request.accuracy_tolerance() > 0) options.accuracy_tolerance = request.accuracy_tolerance();
  if (request.loss_tolerance() > 0) options.loss_tolerance = request.loss_tolerance();
  if (!(request.time_to_accuracy() >= 0 && request.time_to_accuracy() <= 1)) {
    return absl::InvalidArgumentError("time_to_accuracy: a fraction from 0 to 1 (0.89 for 89%)");
  }
  options.time_to_accuracy = request.time_to_accuracy();
  options.validation_first =
      sweep.spec().has_search() && MetricMaximized(sweep.spec().search().metric());
  *response = BuildSweepReport(sweep, jobs, traces, options);
  if (sweep.spec().has_search()) {
    ASSIGN_OR_RETURN(const Store::SearchRecord search, store_->GetSearch(sweep.id()));
    std::map<int64_t, Job> by_id;
    for (const Job& job : jobs) by_id[job.id()] = job;
    ASSIGN_OR_RETURN(*response->mutable_search(), BuildSearchReport(search, by_id));
    if (std::optional<std::string> now =
            searches_ ? searches_->PackingNow(sweep.id()) : std::nullopt) {
      response->mutable_search()->set_packing(*std::move(now));
    }
  }
  // A FIELD=VALUE baseline that no member has is a typo, not a table of dashes. (The default cpu
  // baseline of a sweep without cpu members has no baseline row either, and that is fine.)
  const auto& rows = response->rows();
  if (options.baseline_field != "device" && !jobs.empty() &&
      std::none_of(rows.begin(), rows.end(), [](const auto& row) { return row.is_baseline(); })) {
    std::set<std::string> values;
    for (const Job& job : jobs) values.insert(GetSpecField(job.spec(), options.baseline_field));
    return absl::InvalidArgumentError(absl::StrCat(
        "baseline: no member of sweep ", sweep.id(), " has ", options.baseline_text, "; its ",
        options.baseline_field,
        " values: ", absl::StrJoin(values, ", ", [](std::string* out, const std::string& v) {
          absl::StrAppend(out, v.empty() ? "(default)" : v);
        })));
  }
  BoundReportSize(response, kMaxReplyBytes);
  return absl::OkStatus();
}

namespace {

// A sweep as a list shows it. `what`: the model, or the program a program's sweep runs.
trainer::v1::SweepSummary Summarise(const Store::SweepWithStates& row) {
  const trainer::v1::Sweep& sweep = row.sweep;
  trainer::v1::SweepSummary summary;
  summary.set_id(sweep.id());
  summary.set_name(sweep.spec().name());
  *summary.mutable_create_time() = sweep.create_time();
  summary.set_owner(sweep.owner());
  const JobSpec& base = sweep.spec().base();
  summary.set_what(base.has_script()
                       ? (base.script().args().empty() ? "program" : base.script().args(0))
                       : base.model());
  summary.set_varies(AxesText(sweep.spec(), 200));
  auto count = [&](Job::State state) {
    const auto it = row.members.find(state);
    return it == row.members.end() ? 0 : it->second;
  };
  summary.set_queued(count(Job::QUEUED));
  summary.set_running(count(Job::RUNNING));
  summary.set_succeeded(count(Job::SUCCEEDED));
  summary.set_failed(count(Job::FAILED));
  summary.set_cancelled(count(Job::CANCELLED));
  // A search's record lists no member (its trials do): every member is counted in a state.
  int members = 0;
  for (const auto& [state, n] : row.members) members += n;
  summary.set_jobs(sweep.spec().has_search() ? members : sweep.job_ids_size());
  return summary;
}

}  // namespace

absl::Status TrainerService::Sweeps(const trainer::v1::ListSweepsRequest& request,
                                    const Caller& caller,
                                    trainer::v1::ListSweepsResponse* response) {
  ASSIGN_OR_RETURN(const int page_size, PageSize(request.page_size()));
  ASSIGN_OR_RETURN(int64_t before_id, PageStart(request.page_token(), "ListSweeps"));
  // A user token sees its own sweeps, and `name` picks some: read the sweeps in pages until this
  // page is full, at most kMaxScanned rows a call (the token then says where the next call goes
  // on), so one call's cost stays bounded however many sweeps others have.
  constexpr int kReadPage = 200;
  constexpr int kMaxScanned = 20000;
  size_t reply_bytes = 0;
  int scanned = 0;
  while (scanned < kMaxScanned) {
    ASSIGN_OR_RETURN(std::vector<Store::SweepWithStates> rows,
                     store_->ListSweeps(before_id, kReadPage));
    for (Store::SweepWithStates& row : rows) {
      ++scanned;
      before_id = row.sweep.id();
      if (!request.name().empty() && row.sweep.spec().name() != request.name()) continue;
      // Sweeps stored before they named their owner are asked about as GetSweep does.
      const bool mine = row.sweep.owner().empty()
                            ? admission_->OwnSweep(caller, row.sweep.id()).ok()
                            : caller.MayActFor(row.sweep.owner());
      if (!mine) continue;
      if (response->sweeps_size() == page_size || reply_bytes > kMaxReplyBytes) {
        response->set_next_page_token(absl::StrCat(response->sweeps().rbegin()->id()));
        return absl::OkStatus();
      }
      ASSIGN_OR_RETURN(row.members, store_->CountSweepMembers(row.sweep.id()));  // kept ones only
      *response->add_sweeps() = Summarise(row);
      reply_bytes += response->sweeps().rbegin()->ByteSizeLong() + 8;
    }
    if (static_cast<int>(rows.size()) < kReadPage) return absl::OkStatus();  // no more sweeps
  }
  response->set_next_page_token(absl::StrCat(before_id));
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* TrainerService::ListSweeps(grpc::CallbackServerContext* context,
                                                     const trainer::v1::ListSweepsRequest* request,
                                                     trainer::v1::ListSweepsResponse* response) {
  return Offload(context, "ListSweeps", request, [this, request, response](const Caller& caller) {
    return Sweeps(*request, caller, response);
  });
}

grpc::ServerUnaryReactor* TrainerService::SubmitSweep(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request,
                                                      grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::SubmitSweepRequest, trainer::v1::Sweep>(
      context, "SubmitSweep", request, response,
      [this](const trainer::v1::SubmitSweepRequest* request, trainer::v1::Sweep* response,
             const Caller& caller) { return CreateSweep(*request, caller, response); });
}

grpc::ServerUnaryReactor* TrainerService::GetSweep(grpc::CallbackServerContext* context,
                                                   const trainer::v1::GetSweepRequest* request,
                                                   trainer::v1::Sweep* response) {
  return Offload(context, "GetSweep", request,
                 [this, request, response](const Caller& caller) -> absl::Status {
                   ASSIGN_OR_RETURN(*response, admission_->OwnSweep(caller, request->id()));
                   return absl::OkStatus();
                 });
}

grpc::ServerUnaryReactor* TrainerService::CancelSweep(
    grpc::CallbackServerContext* context, const trainer::v1::CancelSweepRequest* request,
    trainer::v1::Sweep* response) {
  return Offload(context, "CancelSweep", request,
                 [this, request, response](const Caller& caller) -> absl::Status {
                   ASSIGN_OR_RETURN(const trainer::v1::Sweep sweep,
                                    admission_->OwnSweep(caller, request->id()));
                   // First the search: it would propose a trial for each one cancelled.
                   if (sweep.spec().has_search()) {
                     RETURN_IF_ERROR(store_->EndSearch(sweep.id()));
                     // Ended, the driver no longer passes it: its trials share nothing more.
                     scheduler_->SetPackWidth(sweep.id(), 1, PackedTrials::kPrograms);
                   }
                   for (int64_t id : sweep.job_ids()) {
                     absl::StatusOr<Job> cancelled = scheduler_->Cancel(id);
                     // FAILED_PRECONDITION: it had ended.
                     if (!cancelled.ok() && !absl::IsFailedPrecondition(cancelled.status())) {
                       return cancelled.status();
                     }
                   }
                   ASSIGN_OR_RETURN(*response, admission_->OwnSweep(caller, request->id()));
                   return absl::OkStatus();
                 });
}

grpc::ServerUnaryReactor* TrainerService::GetSweepReport(
    grpc::CallbackServerContext* context, const trainer::v1::GetSweepReportRequest* request,
    trainer::v1::SweepReport* response) {
  return Offload(context, "GetSweepReport", request,
                 [this, request, response](const Caller& caller) {
                   return Report(*request, caller, response);
                 });
}

}  // namespace traind
