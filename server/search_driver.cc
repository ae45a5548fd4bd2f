#include "server/search_driver.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/job_spec.h"
#include "common/log_priority.h"
#include "common/script_spec.h"
#include "common/status_macros.h"
#include "server/search_plan.h"

namespace traind {

using trainer::v1::Job;

namespace {

// Only the jobs of the trials the search may still act on (running or paused) are read: a search
// of thousands of trials is not thousands of reads a pass.
absl::StatusOr<SearchTrials> ReadTrials(Store* store, const Store::SearchRecord& record,
                                        const AshaState& state) {
  SearchTrials trials;
  for (size_t k = 0; k < record.trials.size(); ++k) {
    trials.params.push_back(ParseParamsText(record.trials[k].params));
    const bool live =
        k < state.trials.size() && (state.trials[k].status == AshaTrialStatus::kRunning ||
                                    state.trials[k].status == AshaTrialStatus::kPaused);
    Job job;
    if (live) {
      ASSIGN_OR_RETURN(job, store->GetJob(record.trials[k].job_id));
    } else {
      job.set_id(record.trials[k].job_id);
    }
    trials.jobs.push_back(std::move(job));
  }
  return trials;
}

absl::StatusOr<std::vector<trainer::v1::JobEvent>> AllEvents(Store* store, int64_t job_id) {
  std::vector<trainer::v1::JobEvent> all;
  int64_t from = 1;
  while (true) {
    ASSIGN_OR_RETURN(std::vector<trainer::v1::JobEvent> page,
                     store->ReadEvents(job_id, from, 1000));
    for (auto& event : page) all.push_back(std::move(event));
    if (page.size() < 1000) return all;
    from = all.back().seq() + 1;
  }
}

// A running trial whose job paused or ended: its metric at the rung it trained to (or, for a job
// that stopped before it, at its last evaluation), or a failure.
absl::Status Reconcile(Store* store, const SearchPlan& plan, const SearchTrials& trials,
                       AshaState* state, bool* changed) {
  for (size_t k = 0; k < state->trials.size() && k < trials.jobs.size(); ++k) {
    AshaTrial& trial = state->trials[k];
    const Job& job = trials.jobs[k];
    if (trial.status != AshaTrialStatus::kRunning) continue;
    if (job.state() == Job::FAILED || job.state() == Job::CANCELLED) {
      RETURN_IF_ERROR(RecordFailure(static_cast<int64_t>(k), state));
      *changed = true;
      continue;
    }
    if (job.state() != Job::PAUSED && job.state() != Job::SUCCEEDED) continue;
    const int epochs = static_cast<int>(NextStopEpochs(plan.asha, trial));
    ASSIGN_OR_RETURN(std::vector<trainer::v1::JobEvent> events, AllEvents(store, job.id()));
    std::optional<double> metric = MetricAtEpoch(events, plan.metric, epochs);
    // None at its rung: it stopped early (stop_at_accuracy), or the summary of its last epoch
    // was on its way when traind was killed: its last evaluation stands in.
    for (int e = epochs - 1; !metric && e >= 1; --e) metric = MetricAtEpoch(events, plan.metric, e);
    const bool at_last_rung = epochs >= plan.asha.max_resource;
    if (metric && (job.state() == Job::PAUSED || at_last_rung)) {
      RETURN_IF_ERROR(RecordResult(plan.asha, static_cast<int64_t>(k), *metric, state));
    } else if (metric) {
      // It ended before its rung's end (stopped early): its result counts, it goes no further.
      RETURN_IF_ERROR(RecordResult(plan.asha, static_cast<int64_t>(k), *metric, state));
      RETURN_IF_ERROR(RecordFailure(static_cast<int64_t>(k), state));
    } else {
      LogAt(LogPriority::kWarning)
          << "traind: search " << job.sweep_id() << ": trial " << k << " (job " << job.id()
          << ") reported no " << plan.metric << " at epoch " << epochs << "\n";
      RETURN_IF_ERROR(RecordFailure(static_cast<int64_t>(k), state));
    }
    *changed = true;
  }
  return absl::OkStatus();
}

int RunningTrials(const AshaState& state) {
  return static_cast<int>(std::count_if(
      state.trials.begin(), state.trials.end(),
      [](const AshaTrial& trial) { return trial.status == AshaTrialStatus::kRunning; }));
}

// The epochs `action` (a promotion or a new trial) trains: to its rung, from where a promoted
// trial paused.
int64_t EpochsToTrain(const SearchTrials& trials, const AshaAction& action) {
  int64_t from = 0;
  if (action.kind == AshaAction::Kind::kPromote && action.trial >= 0 &&
      static_cast<size_t>(action.trial) < trials.jobs.size()) {
    from = trials.jobs[static_cast<size_t>(action.trial)].pause_after_epoch();
  }
  return std::max<int64_t>(0, action.epochs - from);
}

// The epoch a trial training to `epochs` pauses after: 0 at the last rung (it trains to its end).
int PauseAfter(const SearchPlan& plan, int64_t epochs) {
  return epochs >= plan.asha.max_resource ? 0 : static_cast<int>(epochs);
}

}  // namespace

SearchDriver::SearchDriver(Store* store, Options options)
    : store_(store), options_(std::move(options)) {}

SearchDriver::~SearchDriver() { Stop(); }

void SearchDriver::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void SearchDriver::Wake() {
  absl::MutexLock lock(&mu_);
  wake_ = true;
}

void SearchDriver::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void SearchDriver::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      // Every 2 s regardless: a wake missed (a trial cancelled by another path) costs no more.
      mu_.AwaitWithTimeout(absl::Condition(
                               +[](SearchDriver* d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(d->mu_) {
                                 return d->wake_ || d->stopping_;
                               },
                               this),
                           absl::Seconds(2));
      if (stopping_) return;
      wake_ = false;
    }
    absl::StatusOr<std::vector<int64_t>> searches = store_->UnfinishedSearches();
    if (!searches.ok()) {
      LogAt(LogPriority::kError) << "traind: searches: " << searches.status() << "\n";
      continue;
    }
    for (int64_t id : *searches) {
      if (absl::Status advanced = Advance(id); !advanced.ok()) {
        LogAt(LogPriority::kError) << "traind: search " << id << ": " << advanced << "\n";
      }
    }
  }
}

absl::Status SearchDriver::Advance(int64_t sweep_id) {
  ASSIGN_OR_RETURN(Store::SearchRecord record, store_->GetSearch(sweep_id));
  if (record.done) {
    Unpack(sweep_id);  // cancelled
    budget_.Forget(sweep_id);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const SearchPlan plan, PlanSearch(record.spec));
  ASSIGN_OR_RETURN(AshaState state, ParseAshaState(record.state));
  ASSIGN_OR_RETURN(SearchTrials trials, ReadTrials(store_, record, state));
  bool changed = false;
  RETURN_IF_ERROR(Reconcile(store_, plan, trials, &state, &changed));
  // Trials on one GPU each until one was measured alone; then as many as share a GPU.
  const int lanes = options_.lanes ? std::max(1, options_.lanes(record.spec.base())) : 1;
  const int width = UpdatePacking(record, plan, trials.jobs, lanes);
  const int parallel =
      record.spec.search().parallel() > 0 ? record.spec.search().parallel() : lanes * width;
  ASSIGN_OR_RETURN(Spend spend, budget_.Read(store_, record, plan, trials.jobs, state));
  bool queued = false;
  while (true) {
    const bool room = RunningTrials(state) < parallel;
    ASSIGN_OR_RETURN(AshaAction action, NextAction(plan.asha, state, room));
    if (action.kind == AshaAction::Kind::kPromote && !room) action.kind = AshaAction::Kind::kWait;
    const bool trains =
        action.kind == AshaAction::Kind::kPromote || action.kind == AshaAction::Kind::kStartNew;
    const int64_t epochs = trains ? EpochsToTrain(trials, action) : 0;
    if (trains && !Affordable(spend, epochs)) {
      // The budget: nothing more starts; once the running trials are in, the search is over.
      action.kind = RunningTrials(state) == 0 ? AshaAction::Kind::kDone : AshaAction::Kind::kWait;
    }
    if (action.kind == AshaAction::Kind::kWait) break;
    if (action.kind == AshaAction::Kind::kDone) {
      RETURN_IF_ERROR(Finish(record, trials, state));
      Unpack(sweep_id);
      budget_.Forget(sweep_id);
      changed = false;
      break;
    }
    RETURN_IF_ERROR(ApplyAction(plan.asha, action, &state));
    if (action.kind == AshaAction::Kind::kPromote) {
      RETURN_IF_ERROR(Promote(record, plan, trials, action, &state));
    } else {
      RETURN_IF_ERROR(StartTrial(record, plan, action, &trials, &state));
    }
    spend.committed_seconds += static_cast<double>(epochs) * spend.epoch_seconds;
    changed = false;  // stored with the trial
    queued = true;
  }
  if (changed) RETURN_IF_ERROR(store_->SaveSearchState(sweep_id, SerializeAshaState(state), false));
  if (queued && options_.on_queued) options_.on_queued();
  return absl::OkStatus();
}

int SearchDriver::UpdatePacking(const Store::SearchRecord& record, const SearchPlan& plan,
                                const std::vector<Job>& jobs, int lanes) {
  std::optional<Packing> packing;
  bool held_back = false;  // the stored width does not hold now
  // Only built-in trials on a GPU connect to traind's MPS daemon (server/job_launcher.h).
  const trainer::v1::JobSpec& base = record.spec.base();
  std::function<bool()> side_by_side;
  if (IsCudaDevice(base.device()) && !IsScriptJob(base) && options_.gpu_side_by_side) {
    side_by_side = options_.gpu_side_by_side;
  }
  if (record.pack_width > 0) {
    packing = Packing{record.pack_width, record.pack_why, record.pack_side_by_side};
    // Decided side by side, and traind runs no MPS now (restarted with --mps off, or it failed):
    // taking turns at that width would slow every trial. Not stored: with MPS back it holds again.
    if (packing->width > 1 && packing->side_by_side && !(side_by_side && side_by_side())) {
      packing = Packing{1, absl::StrCat("1 trial per GPU while traind runs no MPS: decided as \"",
                                        record.pack_why, "\"")};
      held_back = true;
    }
  } else {
    packing = DecideSearchPacking(record.spec, plan, jobs,
                                  PackingHost{options_.host_cores, lanes, side_by_side});
    if (!packing) return 1;  // never packed (several GPUs, hosts), or nothing measured yet
    LogAt(LogPriority::kInfo) << "traind: search " << record.sweep_id << ": " << packing->why
                              << "\n";
    // Unsaved, it is decided again on the next pass from what is there then.
    if (absl::Status saved = store_->SaveSearchPacking(record.sweep_id, packing->width,
                                                       packing->why, packing->side_by_side);
        !saved.ok()) {
      LogAt(LogPriority::kError) << "traind: search " << record.sweep_id << ": " << saved << "\n";
    }
  }
  {
    absl::MutexLock lock(&mu_);
    if (held_back) {
      packing_now_[record.sweep_id] = packing->why;
    } else {
      packing_now_.erase(record.sweep_id);
    }
  }
  if (options_.set_pack_width) {
    options_.set_pack_width(record.sweep_id, packing->width,
                            IsScriptJob(base)             ? PackedTrials::kPrograms
                            : IsCudaDevice(base.device()) ? PackedTrials::kWorkersOnGpu
                                                          : PackedTrials::kWorkersOnCpu);
  }
  return packing->width;
}

void SearchDriver::Unpack(int64_t sweep_id) {
  {
    absl::MutexLock lock(&mu_);
    packing_now_.erase(sweep_id);  // over: the report says what was decided
  }
  if (options_.set_pack_width) options_.set_pack_width(sweep_id, 1, PackedTrials::kPrograms);
}

std::optional<std::string> SearchDriver::PackingNow(int64_t sweep_id) {
  absl::MutexLock lock(&mu_);
  auto it = packing_now_.find(sweep_id);
  if (it == packing_now_.end()) return std::nullopt;
  return it->second;
}

absl::Status SearchDriver::Promote(const Store::SearchRecord& record, const SearchPlan& plan,
                                   const SearchTrials& trials, const AshaAction& action,
                                   AshaState* state) {
  const Job& job = trials.jobs[action.trial];
  const int from = job.pause_after_epoch();
  const std::string reason = absl::StrCat(
      "promoted by search ", record.sweep_id, " to rung ", action.rung + 1, ": resumes",
      from > 0 ? absl::StrCat(" after epoch ", from) : "", " and trains to epoch ", action.epochs);
  absl::Status moved =
      store_->MoveTrial(record.sweep_id, job.id(), Job::QUEUED, PauseAfter(plan, action.epochs),
                        reason, SerializeAshaState(*state));
  if (!absl::IsFailedPrecondition(moved)) return moved;
  // Its job was cancelled (or deleted) while paused: the trial can go no further.
  RETURN_IF_ERROR(RecordFailure(action.trial, state));
  return store_->SaveSearchState(record.sweep_id, SerializeAshaState(*state), false);
}

absl::Status SearchDriver::StartTrial(const Store::SearchRecord& record, const SearchPlan& plan,
                                      const AshaAction& action, SearchTrials* trials,
                                      AshaState* state) {
  ASSIGN_OR_RETURN(ParamValues params,
                   ProposeTrial(plan, action.trial, Observations(plan, *state, trials->params)));
  ASSIGN_OR_RETURN(trainer::v1::JobSpec spec, TrialSpec(record.spec, params));
  if (!record.spec.name().empty()) {
    spec.set_name(absl::StrCat(record.spec.name(), " #", action.trial));
  }
  // A checkpoint at every epoch's end: a traind killed mid-search trains no finished epoch again.
  if (spec.checkpoint_every() == 0) spec.set_checkpoint_every(1);
  Job member;
  *member.mutable_spec() = std::move(spec);
  member.set_owner(record.owner);
  member.set_priority(record.spec.priority());
  // A search's trials share the lanes unless asked otherwise: they are many and small.
  member.set_exclusive(record.spec.has_exclusive() && record.spec.exclusive());
  member.set_pause_after_epoch(PauseAfter(plan, action.epochs));
  ASSIGN_OR_RETURN(Job job, store_->AddSearchTrial(record.sweep_id, std::move(member),
                                                   ParamsText(params), SerializeAshaState(*state)));
  trials->params.push_back(std::move(params));
  trials->jobs.push_back(std::move(job));
  return absl::OkStatus();
}

absl::Status SearchDriver::Finish(const Store::SearchRecord& record, const SearchTrials& trials,
                                  const AshaState& state) {
  const std::string text = SerializeAshaState(state);
  for (size_t k = 0; k < state.trials.size() && k < trials.jobs.size(); ++k) {
    if (state.trials[k].status != AshaTrialStatus::kPaused) continue;
    const Job& job = trials.jobs[k];
    const absl::Status ended = store_->MoveTrial(
        record.sweep_id, job.id(), Job::SUCCEEDED, job.pause_after_epoch(),
        absl::StrCat("search ", record.sweep_id, " is over: stopped after epoch ",
                     job.pause_after_epoch(), ", its rung (not among the best there)"),
        text);
    if (!ended.ok() && !absl::IsFailedPrecondition(ended)) return ended;
  }
  return store_->SaveSearchState(record.sweep_id, text, /*done=*/true);
}

}  // namespace traind
