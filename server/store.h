// Store: the durable state of traind in one SQLite file (WAL, synchronous=FULL).
//   jobs(id, state, job)          job = serialized trainer.v1.Job, state mirrored for queries
//   events(job_id, seq, payload)  payload = serialized trainer.v1.JobEvent, seq dense per job
//   job_blobs(job_id, digest)     uploaded blobs a job's spec names (for deleting unused ones)
// Every write is one transaction; a job's row is updated in the same transaction as the event that
// changes it (server/job_fold.h), so a crash at any moment leaves them consistent.
// Thread-safe: one connection behind a mutex. Calls block on disk: never call from a gRPC reaction.
#ifndef TRAIND_SERVER_STORE_H_
#define TRAIND_SERVER_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/fair_mutex.h"
#include "trainer/v1/trainer.pb.h"

struct sqlite3;

namespace traind {

class Store {
 public:
  // Told of every event once it is committed (AppendEvent, and the first event of each job
  // CreateJob and CreateSweep insert), outside the store's lock: the one place that wakes
  // watchers (the daemon passes EventHub::Publish), so no writer has to remember to.
  using EventListener = std::function<void(int64_t job_id, int64_t seq)>;
  // Before the store is shared; not synchronised with writers.
  void SetEventListener(EventListener listener) { listener_ = std::move(listener); }

  // Opens or creates the database at `path`, checks its integrity and schema version.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Inserts a QUEUED job (spec and scheduling fields from `job`; id and state are assigned) and
  // its first event (seq 1, StateChange QUEUED). Durable on return. When the job has an
  // idempotency key that the same owner already used, returns that job instead and sets *existed.
  // max_queued > 0: RESOURCE_EXHAUSTED when job.owner() already has that many QUEUED jobs.
  absl::StatusOr<trainer::v1::Job> CreateJob(const trainer::v1::Job& job, bool* existed = nullptr,
                                             int max_queued = 0);

  // Inserts the sweep and all its member jobs (one owner); max_queued as above. A chunk of members
  // per transaction, so that other calls interleave; until the last commits the members are not
  // QueuedJobs, and a sweep a crash left incomplete is removed when the store is next opened.
  absl::StatusOr<trainer::v1::Sweep> CreateSweep(const trainer::v1::SweepSpec& spec,
                                                 const std::vector<trainer::v1::Job>& members,
                                                 int max_queued = 0);
  absl::StatusOr<trainer::v1::Sweep> GetSweep(int64_t sweep_id);
  // A sweep and how many of its members are in each state.
  struct SweepWithStates {
    trainer::v1::Sweep sweep;
    std::map<trainer::v1::Job::State, int> members;
  };
  // Complete sweeps with an id below `before_id` (0: from the newest), newest first, at most
  // `limit`: one read of the sweeps' rows; `members` left empty (CountSweepMembers fills it for
  // those the caller keeps: a user's listing does not count other owners' sweeps).
  absl::StatusOr<std::vector<SweepWithStates>> ListSweeps(int64_t before_id, int limit);
  // How many of a sweep's members are in each state: one indexed count.
  absl::StatusOr<std::map<trainer::v1::Job::State, int>> CountSweepMembers(int64_t sweep_id);

  // Every QUEUED job the scheduler may start (not a member of a sweep still being inserted),
  // highest priority first, then oldest first. Read in pages, so a long queue does not hold the
  // store: a job changed meanwhile may be missing or stale, which the next pass corrects.
  absl::StatusOr<std::vector<trainer::v1::Job>> QueuedJobs();
  // How many jobs QueuedJobs would return.
  absl::StatusOr<int64_t> CountQueued();

  // Searches (SweepSpec.search; server/search_driver.h). A search is a complete sweep whose
  // members (trials) are added as they are proposed, each in one transaction with the searcher's
  // new state, so that after a crash the state and the trials agree.
  struct SearchRecord {
    int64_t sweep_id = 0;
    std::string owner;
    trainer::v1::SweepSpec spec;
    std::string state;  // the searcher's (search/asha.h SerializeAshaState)
    bool done = false;
    // Trials per GPU (or on the CPU) once decided (server/search_packer.h): 0 while nothing was
    // measured.
    int pack_width = 0;
    std::string pack_why;
    bool pack_side_by_side = false;  // the width holds only while traind runs MPS
    struct Trial {
      int64_t trial = 0;
      int64_t job_id = 0;
      std::string params;  // "field=value" lines
    };
    std::vector<Trial> trials;  // in trial order
  };
  // The sweep (no member yet) and its search's first state.
  absl::StatusOr<trainer::v1::Sweep> CreateSearch(const trainer::v1::SweepSpec& spec,
                                                  const std::string& owner,
                                                  const std::string& state);
  // Trial `trials.size()` of the search: `member` queued as a member of its sweep, with the
  // searcher's state after proposing it. FAILED_PRECONDITION once the search is done (cancelled).
  absl::StatusOr<trainer::v1::Job> AddSearchTrial(int64_t sweep_id, trainer::v1::Job member,
                                                  const std::string& params,
                                                  const std::string& state);
  absl::StatusOr<SearchRecord> GetSearch(int64_t sweep_id);
  // The searches not done, oldest first.
  absl::StatusOr<std::vector<int64_t>> UnfinishedSearches();
  absl::Status SaveSearchState(int64_t sweep_id, const std::string& state, bool done);
  // How many of its trials share a GPU or the CPU, and why (the report's words): decided once.
  // `side_by_side`: decided for trials side by side through MPS (trial_packing.h Packing).
  absl::Status SaveSearchPacking(int64_t sweep_id, int width, const std::string& why,
                                 bool side_by_side);
  // The search proposes nothing more (cancelled); its state stays as it was. OK if it was done.
  absl::Status EndSearch(int64_t sweep_id);
  // A search goes on (ExtendSearch), in one transaction: its sweep's spec becomes `spec` (more
  // trials, another budget), it is not done, and each of `moves` (a trial's job from `from` to
  // `to`: CANCELLED -> QUEUED to run again from its checkpoint, CANCELLED or SUCCEEDED -> PAUSED
  // to wait at its rung again) is applied, a QUEUED one no longer cancel_requested.
  // FAILED_PRECONDITION naming the job when one is no longer in its `from` state.
  struct TrialMove {
    int64_t job_id = 0;
    trainer::v1::Job::State from = trainer::v1::Job::CANCELLED;
    trainer::v1::Job::State to = trainer::v1::Job::QUEUED;
    std::string reason;
  };
  absl::Status ReopenSearch(int64_t sweep_id, const trainer::v1::SweepSpec& spec,
                            const std::vector<TrialMove>& moves);
  // A paused trial moves on with the searcher's new state, in one transaction: QUEUED again to
  // pause after `pause_after_epoch` (0: train to the end), or SUCCEEDED (the search is over and
  // it was not promoted). FAILED_PRECONDITION when the job is not PAUSED (cancelled meanwhile).
  absl::Status MoveTrial(int64_t sweep_id, int64_t job_id, trainer::v1::Job::State to,
                         int pause_after_epoch, const std::string& reason,
                         const std::string& state);

  // Small persistent daemon settings ("" when unset).
  absl::StatusOr<std::string> GetSetting(const std::string& key);
  absl::Status SetSetting(const std::string& key, const std::string& value);

  // Appends `event` to the job's log with the next seq and folds it into the job's row. When
  // `expected_state` is given and the job is in another state, nothing is written and
  // FAILED_PRECONDITION is returned (compare-and-set for state transitions).
  absl::StatusOr<trainer::v1::JobEvent> AppendEvent(
      int64_t job_id, trainer::v1::JobEvent event,
      std::optional<trainer::v1::Job::State> expected_state = std::nullopt);
  // Appends several events to one job's log in one transaction, in order, each with the next seq:
  // a worker's burst (a program printing thousands of lines) costs one commit and one fsync, not
  // one per event. All or none are stored. On success each of `*events` is as stored (its seq,
  // and its time where it had none); on failure they are still there for the caller to retry one
  // by one (a later append gives each its seq again). A pointer, not a copy: this is the hot path
  // of a program's output.
  absl::Status AppendEvents(int64_t job_id, std::vector<trainer::v1::JobEvent>* events);

  // NOT_FOUND names the id.
  absl::StatusOr<trainer::v1::Job> GetJob(int64_t job_id);

  // What a job holds on the daemon besides the blobs it uses: its folder's bytes (0 before it
  // ever ran; -1 from when it runs until measured after it ended: `ended` says whether it has),
  // and its stored events' bytes.
  struct DiskUse {
    int64_t file_bytes = -1;
    int64_t event_bytes = 0;
    bool ended = false;
  };
  // For each of `job_ids` that exists. One indexed read per job: no folder is walked.
  absl::StatusOr<std::map<int64_t, DiskUse>> DiskUseOf(const std::vector<int64_t>& job_ids);
  // A job's folder's bytes, kept once it has ended (a job that runs again is measured again).
  absl::Status SetFileBytes(int64_t job_id, int64_t bytes);
  // Everything `owner`'s jobs hold: what their rows say, and the jobs whose folders are not
  // measured (running, or ended since), which the caller walks. Costs O(owner's jobs) in the
  // index, not a walk of their folders.
  struct OwnerDiskUse {
    int64_t measured_file_bytes = 0;
    int64_t event_bytes = 0;
    struct Unmeasured {
      int64_t job_id;
      bool ended;
    };
    std::vector<Unmeasured> unmeasured;
  };
  absl::StatusOr<OwnerDiskUse> DiskUseOfOwner(const std::string& owner);
  // Pages freed (deleted events) that Compact has not given back yet.
  absl::StatusOr<int64_t> FreePages();

  // Removes a finished job and its events in one transaction. FAILED_PRECONDITION for a job that
  // is not finished, belongs to a sweep, or (unless `force`) that a queued or running job needs
  // (its `after` or `init_from`: the message names them). Returns the blobs it used that no job
  // uses any more (their files are the caller's to remove).
  absl::StatusOr<std::vector<std::string>> DeleteJob(int64_t job_id, bool force = false);
  // Removes a sweep and all its members (each must have ended, and none be needed by a queued or
  // running job outside it) in one transaction; the blobs nothing uses any more, as DeleteJob.
  // `deleted_jobs` (may be null) gets the members' ids.
  absl::StatusOr<std::vector<std::string>> DeleteSweep(int64_t sweep_id,
                                                       std::vector<int64_t>* deleted_jobs);

  // What ended before `end_seconds` (Unix time), at most `limit` of each, oldest first: jobs not
  // in a sweep, and sweeps whose members have all ended before it. Retention deletes these.
  struct Expired {
    std::vector<int64_t> job_ids;
    std::vector<int64_t> sweep_ids;
  };
  absl::StatusOr<Expired> FinishedBefore(int64_t end_seconds, int limit);
  // Jobs that a queued or running job still needs: its `after` dependencies and its init_from
  // source. Retention keeps them.
  absl::StatusOr<std::set<int64_t>> NeededByUnfinishedJobs();

  // Gives up to `max_pages` free pages back to the file system and truncates the WAL: cheap
  // (milliseconds), so retention runs it after each batch instead of a blocking VACUUM.
  absl::Status Compact(int max_pages);

  struct JobFilter {
    std::vector<trainer::v1::Job::State> states;  // empty: any
    int64_t sweep_id = 0;                         // 0: any
    std::string model;                            // empty: any
    std::string device;                           // empty: any
    std::optional<std::string> owner;             // unset: any
  };
  // Newest first; ids below `before_id` when it is > 0.
  absl::StatusOr<std::vector<trainer::v1::Job>> ListJobs(const JobFilter& filter, int64_t before_id,
                                                         int limit);

  // Sets a QUEUED job's priority (the queue orders by it, then by age); FAILED_PRECONDITION for a
  // job in any other state (compare-and-set, so a job the scheduler just claimed is not changed).
  absl::StatusOr<trainer::v1::Job> SetPriority(int64_t job_id, int32_t priority);

  // How many jobs are in each state (states with none are absent); for /metrics.
  absl::StatusOr<std::map<trainer::v1::Job::State, int64_t>> CountJobsByState();

  // The oldest job in `state`, if any.
  absl::StatusOr<std::optional<trainer::v1::Job>> OldestInState(trainer::v1::Job::State state);

  // Events with seq >= from_seq, in order, at most `limit`.
  absl::StatusOr<std::vector<trainer::v1::JobEvent>> ReadEvents(int64_t job_id, int64_t from_seq,
                                                                int limit);

 private:
  explicit Store(sqlite3* db) : db_(db) {}
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A sweep's stored record (a search's: without its members, which its trials list).
  absl::StatusOr<trainer::v1::Sweep> ReadSweepRowLocked(int64_t sweep_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // FAILED_PRECONDITION once the search is done: nothing more of it may change.
  absl::Status SaveSearchStateLocked(int64_t sweep_id, const std::string& state, bool done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `work` (returning a StatusOr) in one transaction: committed if it succeeds, rolled back
  // if it or the commit fails.
  template <typename Work>
  std::invoke_result_t<Work&> InTransaction(Work work) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (absl::Status begin = Exec("BEGIN IMMEDIATE"); !begin.ok()) return begin;
    decltype(work()) result = work();
    if (result.ok()) {
      if (absl::Status commit = Exec("COMMIT"); !commit.ok()) result = commit;
    }
    if (!result.ok()) (void)Exec("ROLLBACK");
    return result;
  }
  absl::StatusOr<trainer::v1::Job> GetJobLocked(int64_t job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int64_t> InsertJobLocked(const trainer::v1::Job& job)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckQueueQuotaLocked(const std::string& owner, int adding, int max_queued)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status BackfillJobColumns() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status BackfillEndTimes() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Needed job id -> the queued or running jobs that need it (their `after` and `init_from`).
  absl::StatusOr<std::map<int64_t, std::vector<int64_t>>> DependentsLocked()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes a finished job's row, events and blob uses; appends blobs nobody uses any more.
  absl::Status DeleteJobLocked(const trainer::v1::Job& job, std::vector<std::string>* unused_blobs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<trainer::v1::JobEvent> AppendEventLocked(
      int64_t job_id, trainer::v1::JobEvent event,
      std::optional<trainer::v1::Job::State> expected_state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives each of `events` the next seq and a time, folds it into `job` and inserts it; the
  // caller writes `job`'s row once after (WriteJobRowLocked).
  absl::Status InsertEventsLocked(trainer::v1::Job& job, std::vector<trainer::v1::JobEvent>& events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteJobRowLocked(const trainer::v1::Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void Tell(int64_t job_id, int64_t seq);
  absl::StatusOr<trainer::v1::Job> InsertOrFindJob(const trainer::v1::Job& job, bool* existed,
                                                   int max_queued);
  // Deletes a sweep's row and its members' rows, events and blob uses (one incomplete sweep).
  absl::Status RemoveSweepRowsLocked(int64_t sweep_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RemoveIncompleteSweepsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // CreateSweep's last step: marks the sweep complete if `status` (of its inserts) is ok, else
  // removes what was inserted; returns the outcome.
  absl::Status FinishSweepLocked(const trainer::v1::Sweep& sweep, const std::string& owner,
                                 size_t not_inserted, absl::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  EventListener listener_;
  // Fair: a long request cut into short holds (CreateSweep) lets every waiter in between them.
  FairMutex mu_;
  sqlite3* const db_ ABSL_PT_GUARDED_BY(mu_);
  // Per owner, members of sweeps being inserted that are not yet in the jobs table: the queue
  // quota counts them, so a submit between two chunks cannot pass the limit.
  std::map<std::string, int64_t> pending_sweep_members_ ABSL_GUARDED_BY(mu_);
};

}  // namespace traind

#endif  // TRAIND_SERVER_STORE_H_
