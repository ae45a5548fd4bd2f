// The Trainer service's handler that makes a search go on (ExtendSearch): more trials, another
// device-time budget, and a search that ended or was cancelled resumed where it stopped.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "search/asha.h"
#include "server/search_plan.h"
#include "server/trainer_service.h"
#include "server/trainer_service_offload.h"

namespace traind {

using trainer::v1::Job;

namespace {

// The search's spec with the request's trials and budget; INVALID_ARGUMENT naming the field.
absl::StatusOr<trainer::v1::SweepSpec> ExtendedSpec(const trainer::v1::ExtendSearchRequest& request,
                                                    trainer::v1::SweepSpec spec) {
  trainer::v1::SearchSpec* search = spec.mutable_search();
  if (request.trials() != 0) {
    if (request.trials() < search->trials() || request.trials() > kMaxSearchTrials) {
      return absl::InvalidArgumentError(absl::StrCat("trials: at least the ", search->trials(),
                                                     " planned so far, at most ", kMaxSearchTrials,
                                                     "; got ", request.trials()));
    }
    search->set_trials(request.trials());
  }
  if (request.has_device_hours()) search->set_device_hours(request.device_hours());
  RETURN_IF_ERROR(PlanSearch(spec).status());  // names device_hours when it is out of range
  return spec;
}

// What resuming moves: a trial cancelled in flight runs again from its checkpoint; a paused one
// cancelled, or ended when the search was over, waits at its rung again (it may be promoted).
absl::StatusOr<std::vector<Store::TrialMove>> ResumeMoves(Store* store,
                                                          const Store::SearchRecord& record,
                                                          const AshaState& state) {
  std::vector<Store::TrialMove> moves;
  for (size_t k = 0; k < record.trials.size() && k < state.trials.size(); ++k) {
    const AshaTrialStatus status = state.trials[k].status;
    if (status != AshaTrialStatus::kRunning && status != AshaTrialStatus::kPaused) continue;
    ASSIGN_OR_RETURN(const Job job, store->GetJob(record.trials[k].job_id));
    if (job.state() == Job::RUNNING && job.cancel_requested()) {
      return absl::FailedPreconditionError(
          absl::StrCat("trial ", k, " (job ", job.id(),
                       ") is still stopping from the cancel; try again once it has stopped"));
    }
    const std::string resumed = absl::StrCat("search ", record.sweep_id, " resumed");
    if (status == AshaTrialStatus::kRunning && job.state() == Job::CANCELLED) {
      moves.push_back(
          {job.id(), Job::CANCELLED, Job::QUEUED, resumed + ": runs again from its checkpoint"});
    } else if (status == AshaTrialStatus::kPaused &&
               (job.state() == Job::CANCELLED || job.state() == Job::SUCCEEDED)) {
      moves.push_back({job.id(), job.state(), Job::PAUSED, resumed + ": waits at its rung again"});
    }
  }
  return moves;
}

// Why a search that ended by itself, reopened as `spec`, would end again at once; "" when it
// may go on. Its trials cancelled in flight run again; otherwise ASHA is asked whether it has
// anything left to do (a new trial, a promotion) whatever the budget: another budget alone does
// not make a finished ladder go on.
std::string NothingToResume(const Store::SearchRecord& record, const trainer::v1::SweepSpec& spec,
                            const AshaState& state, const std::vector<Store::TrialMove>& moves) {
  if (std::any_of(moves.begin(), moves.end(),
                  [](const auto& move) { return move.from == Job::CANCELLED; })) {
    return "";
  }
  const absl::StatusOr<SearchPlan> plan = PlanSearch(spec);
  if (!plan.ok()) return "";  // ExtendedSpec checked it
  const absl::StatusOr<AshaAction> next = NextAction(plan->asha, state, /*room=*/true);
  if (!next.ok() || next->kind != AshaAction::Kind::kDone) return "";
  return absl::StrCat("search ", record.sweep_id, " is over: all ", state.trials.size(),
                      " trials ran and none can go further; give more --trials");
}

}  // namespace

grpc::ServerUnaryReactor* TrainerService::ExtendSearch(
    grpc::CallbackServerContext* context, const trainer::v1::ExtendSearchRequest* request,
    trainer::v1::Sweep* response) {
  return Offload(
      context, "ExtendSearch", request,
      [this, request, response](const Caller& caller) -> absl::Status {
        if (searches_ == nullptr) return absl::UnimplementedError("this traind runs no searches");
        ASSIGN_OR_RETURN(const trainer::v1::Sweep sweep,
                         admission_->OwnSweep(caller, request->id()));
        if (!sweep.spec().has_search()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "sweep ", sweep.id(), " is a grid, not a search: nothing to extend or resume"));
        }
        ASSIGN_OR_RETURN(const Store::SearchRecord record, store_->GetSearch(sweep.id()));
        ASSIGN_OR_RETURN(const trainer::v1::SweepSpec spec, ExtendedSpec(*request, record.spec));
        ASSIGN_OR_RETURN(const AshaState state, ParseAshaState(record.state));
        std::vector<Store::TrialMove> moves;
        if (record.done) {
          ASSIGN_OR_RETURN(moves, ResumeMoves(store_, record, state));
          if (const std::string why = NothingToResume(record, spec, state, moves); !why.empty()) {
            return absl::FailedPreconditionError(why);
          }
        }
        RETURN_IF_ERROR(store_->ReopenSearch(sweep.id(), spec, moves));
        searches_->Wake();
        scheduler_->Wake();
        ASSIGN_OR_RETURN(*response, admission_->OwnSweep(caller, request->id()));
        return absl::OkStatus();
      });
}

}  // namespace traind
