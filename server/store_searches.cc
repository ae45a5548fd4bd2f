// The store's searches: a search's sweep, its trials (each a member added with the searcher's
// state in one transaction) and the moves of its paused trials.
#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "common/job_result.h"
#include "common/status_macros.h"
#include "server/store.h"
#include "server/store_sql.h"

namespace traind {

using store_sql::Now;
using store_sql::SqliteError;
using store_sql::Statement;
using trainer::v1::Job;
using trainer::v1::JobEvent;

absl::StatusOr<trainer::v1::Sweep> Store::CreateSearch(const trainer::v1::SweepSpec& spec,
                                                       const std::string& owner,
                                                       const std::string& state) {
  trainer::v1::Sweep sweep;
  *sweep.mutable_spec() = spec;
  *sweep.mutable_create_time() = Now();
  sweep.set_owner(owner);
  FairMutexLock lock(&mu_);
  return InTransaction([&]() -> absl::StatusOr<trainer::v1::Sweep> {
    mu_.AssertHeld();
    Statement insert(db_, "INSERT INTO sweeps(sweep, complete) VALUES(?, 1)");
    RETURN_IF_ERROR(insert.status("insert search"));
    insert.Bind(1, sweep.SerializeAsString());
    if (insert.Step() != SQLITE_DONE) return SqliteError(db_, "insert search");
    sweep.set_id(sqlite3_last_insert_rowid(db_));
    // Its id inside its own record, as CreateSweep's members find theirs.
    Statement update(db_, "UPDATE sweeps SET sweep = ? WHERE id = ?");
    RETURN_IF_ERROR(update.status("insert search"));
    update.Bind(1, sweep.SerializeAsString());
    update.Bind(2, sweep.id());
    if (update.Step() != SQLITE_DONE) return SqliteError(db_, "insert search");
    Statement search(db_, "INSERT INTO searches(sweep_id, state, done) VALUES(?, ?, 0)");
    RETURN_IF_ERROR(search.status("insert search"));
    search.Bind(1, sweep.id());
    search.BindText(2, state);
    if (search.Step() != SQLITE_DONE) return SqliteError(db_, "insert search");
    return sweep;
  });
}

absl::Status Store::SaveSearchStateLocked(int64_t sweep_id, const std::string& state, bool done) {
  Statement update(db_, "UPDATE searches SET state = ?, done = ? WHERE sweep_id = ? AND done = 0");
  RETURN_IF_ERROR(update.status("save search"));
  update.BindText(1, state);
  update.Bind(2, static_cast<int64_t>(done ? 1 : 0));
  update.Bind(3, sweep_id);
  if (update.Step() != SQLITE_DONE) return SqliteError(db_, "save search");
  if (sqlite3_changes(db_) != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("search ", sweep_id, " is over (or was deleted)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Job> Store::AddSearchTrial(int64_t sweep_id, Job member, const std::string& params,
                                          const std::string& state) {
  int64_t id = 0;
  {
    FairMutexLock lock(&mu_);
    absl::Status added = InTransaction([&]() -> absl::Status {
      mu_.AssertHeld();
      RETURN_IF_ERROR(SaveSearchStateLocked(sweep_id, state, /*done=*/false));
      member.set_sweep_id(sweep_id);
      ASSIGN_OR_RETURN(id, InsertJobLocked(member));
      Statement trial(db_,
                      "INSERT INTO search_trials(sweep_id, trial, job_id, params) VALUES(?, "
                      "(SELECT COUNT(*) FROM search_trials WHERE sweep_id = ?), ?, ?)");
      RETURN_IF_ERROR(trial.status("insert trial"));
      trial.Bind(1, sweep_id);
      trial.Bind(2, sweep_id);
      trial.Bind(3, id);
      trial.BindText(4, params);
      if (trial.Step() != SQLITE_DONE) return SqliteError(db_, "insert trial");
      return absl::OkStatus();
    });
    RETURN_IF_ERROR(added);
  }
  Tell(id, 1);
  return GetJob(id);
}

absl::StatusOr<Store::SearchRecord> Store::GetSearch(int64_t sweep_id) {
  FairMutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const trainer::v1::Sweep sweep, ReadSweepRowLocked(sweep_id));
  SearchRecord record;
  record.sweep_id = sweep_id;
  record.owner = sweep.owner();
  record.spec = sweep.spec();
  Statement search(db_,
                   "SELECT state, done, pack_width, pack_why, pack_side_by_side FROM searches "
                   "WHERE sweep_id = ?");
  RETURN_IF_ERROR(search.status("read search"));
  search.Bind(1, sweep_id);
  const int rc = search.Step();
  if (rc == SQLITE_DONE) {
    return absl::NotFoundError(absl::StrCat("sweep ", sweep_id, " is not a search"));
  }
  if (rc != SQLITE_ROW) return SqliteError(db_, "read search");
  record.state = search.Blob(0);
  record.done = search.Int(1) != 0;
  record.pack_width = static_cast<int>(search.Int(2));
  record.pack_why = search.Blob(3);
  record.pack_side_by_side = search.Int(4) != 0;
  Statement trials(db_,
                   "SELECT trial, job_id, params FROM search_trials WHERE sweep_id = ? "
                   "ORDER BY trial");
  RETURN_IF_ERROR(trials.status("read trials"));
  trials.Bind(1, sweep_id);
  int step;
  while ((step = trials.Step()) == SQLITE_ROW) {
    record.trials.push_back({trials.Int(0), trials.Int(1), trials.Blob(2)});
  }
  if (step != SQLITE_DONE) return SqliteError(db_, "read trials");
  return record;
}

absl::StatusOr<std::vector<int64_t>> Store::UnfinishedSearches() {
  FairMutexLock lock(&mu_);
  Statement select(db_, "SELECT sweep_id FROM searches WHERE done = 0 ORDER BY sweep_id");
  RETURN_IF_ERROR(select.status("read searches"));
  std::vector<int64_t> ids;
  int rc;
  while ((rc = select.Step()) == SQLITE_ROW) ids.push_back(select.Int(0));
  if (rc != SQLITE_DONE) return SqliteError(db_, "read searches");
  return ids;
}

absl::Status Store::SaveSearchState(int64_t sweep_id, const std::string& state, bool done) {
  FairMutexLock lock(&mu_);
  return InTransaction([&] {
    mu_.AssertHeld();
    return SaveSearchStateLocked(sweep_id, state, done);
  });
}

absl::Status Store::SaveSearchPacking(int64_t sweep_id, int width, const std::string& why,
                                      bool side_by_side) {
  FairMutexLock lock(&mu_);
  return InTransaction([&]() -> absl::Status {
    mu_.AssertHeld();
    Statement update(db_,
                     "UPDATE searches SET pack_width = ?, pack_why = ?, pack_side_by_side = ? "
                     "WHERE sweep_id = ?");
    RETURN_IF_ERROR(update.status("save packing"));
    update.Bind(1, static_cast<int64_t>(width));
    update.BindText(2, why);
    update.Bind(3, int64_t{side_by_side ? 1 : 0});
    update.Bind(4, sweep_id);
    if (update.Step() != SQLITE_DONE) return SqliteError(db_, "save packing");
    if (sqlite3_changes(db_) != 1) {
      return absl::NotFoundError(absl::StrCat("sweep ", sweep_id, " is not a search"));
    }
    return absl::OkStatus();
  });
}

absl::Status Store::EndSearch(int64_t sweep_id) {
  FairMutexLock lock(&mu_);
  return InTransaction([&]() -> absl::Status {
    mu_.AssertHeld();
    Statement update(db_, "UPDATE searches SET done = 1 WHERE sweep_id = ?");
    RETURN_IF_ERROR(update.status("end search"));
    update.Bind(1, sweep_id);
    if (update.Step() != SQLITE_DONE) return SqliteError(db_, "end search");
    return absl::OkStatus();
  });
}

absl::Status Store::MoveTrial(int64_t sweep_id, int64_t job_id, Job::State to,
                              int pause_after_epoch, const std::string& reason,
                              const std::string& state) {
  int64_t seq = 0;
  {
    FairMutexLock lock(&mu_);
    absl::Status moved = InTransaction([&]() -> absl::Status {
      mu_.AssertHeld();
      RETURN_IF_ERROR(SaveSearchStateLocked(sweep_id, state, /*done=*/false));
      ASSIGN_OR_RETURN(Job job, GetJobLocked(job_id));
      if (job.state() != Job::PAUSED) {
        return absl::FailedPreconditionError(
            absl::StrCat("job ", job_id, " is ", Job::State_Name(job.state())));
      }
      // Set before the event folds in: WriteJobRowLocked stores the row as folded.
      job.set_pause_after_epoch(pause_after_epoch);
      if (to == Job::SUCCEEDED) {
        // Ended at its rung: `show` says where and why, as it does for an early stop.
        trainer::v1::Stopped* stopped = job.mutable_result()->mutable_stopped();
        stopped->set_reason(reason);
        stopped->set_epoch(pause_after_epoch);
        stopped->set_train_seconds(TrainingSeconds(job));
      }
      Statement update(db_, "UPDATE jobs SET job = ? WHERE id = ?");
      RETURN_IF_ERROR(update.status("move trial"));
      update.Bind(1, job.SerializeAsString());
      update.Bind(2, job_id);
      if (update.Step() != SQLITE_DONE) return SqliteError(db_, "move trial");
      JobEvent event;
      event.mutable_state_change()->set_state(to);
      event.mutable_state_change()->set_reason(reason);
      ASSIGN_OR_RETURN(JobEvent stored, AppendEventLocked(job_id, std::move(event), Job::PAUSED));
      seq = stored.seq();
      return absl::OkStatus();
    });
    RETURN_IF_ERROR(moved);
  }
  Tell(job_id, seq);
  return absl::OkStatus();
}

absl::Status Store::ReopenSearch(int64_t sweep_id, const trainer::v1::SweepSpec& spec,
                                 const std::vector<TrialMove>& moves) {
  std::vector<std::pair<int64_t, int64_t>> told;  // job, seq
  {
    FairMutexLock lock(&mu_);
    absl::Status reopened = InTransaction([&]() -> absl::Status {
      mu_.AssertHeld();
      ASSIGN_OR_RETURN(trainer::v1::Sweep sweep, ReadSweepRowLocked(sweep_id));
      *sweep.mutable_spec() = spec;
      sweep.clear_job_ids();  // a search's record lists no members: its trials table does
      sweep.clear_search_done();
      Statement update(db_, "UPDATE sweeps SET sweep = ? WHERE id = ?");
      RETURN_IF_ERROR(update.status("reopen search"));
      update.Bind(1, sweep.SerializeAsString());
      update.Bind(2, sweep_id);
      if (update.Step() != SQLITE_DONE) return SqliteError(db_, "reopen search");
      Statement search(db_, "UPDATE searches SET done = 0 WHERE sweep_id = ?");
      RETURN_IF_ERROR(search.status("reopen search"));
      search.Bind(1, sweep_id);
      if (search.Step() != SQLITE_DONE) return SqliteError(db_, "reopen search");
      for (const TrialMove& move : moves) {
        ASSIGN_OR_RETURN(Job job, GetJobLocked(move.job_id));
        if (job.state() != move.from || job.sweep_id() != sweep_id) {
          return absl::FailedPreconditionError(
              absl::StrCat("job ", move.job_id, " is ", Job::State_Name(job.state()), ", not ",
                           Job::State_Name(move.from), ": try again once it has stopped"));
        }
        // Before the event folds in, as MoveTrial does: the cancel is over, and a trial ended at
        // its rung (Stopped) waits there again.
        const bool stale = job.cancel_requested() || !job.result().error().empty() ||
                           (move.to == Job::PAUSED && job.result().has_stopped());
        if (stale) {
          job.set_cancel_requested(false);
          job.mutable_result()->clear_error();
          if (move.to == Job::PAUSED) job.mutable_result()->clear_stopped();
          Statement row(db_, "UPDATE jobs SET job = ? WHERE id = ?");
          RETURN_IF_ERROR(row.status("reopen search"));
          row.Bind(1, job.SerializeAsString());
          row.Bind(2, move.job_id);
          if (row.Step() != SQLITE_DONE) return SqliteError(db_, "reopen search");
        }
        JobEvent event;
        event.mutable_state_change()->set_state(move.to);
        event.mutable_state_change()->set_reason(move.reason);
        ASSIGN_OR_RETURN(JobEvent stored,
                         AppendEventLocked(move.job_id, std::move(event), move.from));
        told.emplace_back(move.job_id, stored.seq());
      }
      return absl::OkStatus();
    });
    RETURN_IF_ERROR(reopened);
  }
  for (const auto& [job_id, seq] : told) Tell(job_id, seq);
  return absl::OkStatus();
}

}  // namespace traind
