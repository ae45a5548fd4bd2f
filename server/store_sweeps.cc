// The store's sweeps: a sweep and its members created in chunks, read, listed, deleted.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log_priority.h"
#include "common/status_macros.h"
#include "server/job_fold.h"
#include "server/store.h"
#include "server/store_sql.h"

namespace traind {

using store_sql::kSweepChunk;
using store_sql::NotWhileNeeded;
using store_sql::Now;
using store_sql::ReadJobRows;
using store_sql::SqliteError;
using store_sql::Statement;
using trainer::v1::Job;
using trainer::v1::JobEvent;

absl::StatusOr<trainer::v1::Sweep> Store::CreateSweep(const trainer::v1::SweepSpec& spec,
                                                      const std::vector<Job>& members,
                                                      int max_queued) {
  // A sweep may have 10,000 members, about a second of inserts: in one transaction it would hold
  // the store (and so every call, and every running job's events) that long. Instead the sweep's
  // row is inserted incomplete, its members a chunk per transaction with the lock released in
  // between, and a last transaction marks it complete. Until then the scheduler does not see the
  // members; a crash leaves an incomplete sweep that the next start-up removes, so the caller,
  // who was never told of it, loses nothing and no half sweep ever runs.
  const std::string owner = members.empty() ? std::string() : members.front().owner();
  trainer::v1::Sweep sweep;
  *sweep.mutable_spec() = spec;
  *sweep.mutable_create_time() = Now();
  if (!members.empty()) sweep.set_owner(owner);
  {
    FairMutexLock lock(&mu_);
    absl::Status begun = InTransaction([&]() -> absl::Status {
      mu_.AssertHeld();
      if (!members.empty()) {
        RETURN_IF_ERROR(CheckQueueQuotaLocked(owner, static_cast<int>(members.size()), max_queued));
      }
      Statement insert(db_, "INSERT INTO sweeps(sweep, complete) VALUES(?, 0)");
      RETURN_IF_ERROR(insert.status("insert sweep"));
      insert.Bind(1, sweep.SerializeAsString());
      if (insert.Step() != SQLITE_DONE) return SqliteError(db_, "insert sweep");
      sweep.set_id(sqlite3_last_insert_rowid(db_));
      return absl::OkStatus();
    });
    if (!begun.ok()) return begun;
    pending_sweep_members_[owner] += static_cast<int64_t>(members.size());
  }
  absl::Status status;
  size_t inserted = 0;
  while (status.ok() && inserted < members.size()) {
    const size_t end = std::min(members.size(), inserted + kSweepChunk);
    FairMutexLock lock(&mu_);
    std::vector<int64_t> ids;
    status = InTransaction([&]() -> absl::Status {
      mu_.AssertHeld();
      for (size_t i = inserted; i < end; ++i) {
        Job member = members[i];
        member.set_sweep_id(sweep.id());
        ASSIGN_OR_RETURN(const int64_t id, InsertJobLocked(member));
        ids.push_back(id);
      }
      return absl::OkStatus();
    });
    if (!status.ok()) break;
    for (int64_t id : ids) sweep.add_job_ids(id);
    pending_sweep_members_[owner] -= static_cast<int64_t>(end - inserted);
    inserted = end;
  }
  {
    FairMutexLock lock(&mu_);
    status = FinishSweepLocked(sweep, owner, members.size() - inserted, status);
  }
  if (!status.ok()) return status;
  for (int64_t id : sweep.job_ids()) Tell(id, 1);
  return sweep;
}

absl::Status Store::FinishSweepLocked(const trainer::v1::Sweep& sweep, const std::string& owner,
                                      size_t not_inserted, absl::Status status) {
  if (status.ok()) {
    status = InTransaction([&]() -> absl::Status {
      mu_.AssertHeld();
      Statement update(db_, "UPDATE sweeps SET sweep = ?, complete = 1 WHERE id = ?");
      RETURN_IF_ERROR(update.status("complete sweep"));
      update.Bind(1, sweep.SerializeAsString());
      update.Bind(2, sweep.id());
      if (update.Step() != SQLITE_DONE) return SqliteError(db_, "complete sweep");
      if (sqlite3_changes(db_) != 1) {  // deleted meanwhile (it had no member yet)
        return absl::AbortedError(
            absl::StrCat("sweep ", sweep.id(), " was deleted while it was being created"));
      }
      return absl::OkStatus();
    });
  }
  auto pending = pending_sweep_members_.find(owner);
  pending->second -= static_cast<int64_t>(not_inserted);
  if (pending->second == 0) pending_sweep_members_.erase(pending);
  if (!status.ok()) {
    // Best effort: what fails here too (a full disk) start-up removes instead.
    (void)InTransaction([&] {
      mu_.AssertHeld();
      return RemoveSweepRowsLocked(sweep.id());
    });
  }
  return status;
}

absl::Status Store::RemoveSweepRowsLocked(int64_t sweep_id) {
  static constexpr const char* kRemove[] = {
      "DELETE FROM events WHERE job_id IN (SELECT id FROM jobs WHERE sweep_id = ?)",
      "DELETE FROM job_blobs WHERE job_id IN (SELECT id FROM jobs WHERE sweep_id = ?)",
      "DELETE FROM jobs WHERE sweep_id = ?",
      "DELETE FROM sweeps WHERE id = ?",
      "DELETE FROM searches WHERE sweep_id = ?",
      "DELETE FROM search_trials WHERE sweep_id = ?",
  };
  for (const char* sql : kRemove) {
    Statement remove(db_, sql);
    RETURN_IF_ERROR(remove.status("remove incomplete sweep"));
    remove.Bind(1, sweep_id);
    if (remove.Step() != SQLITE_DONE) return SqliteError(db_, "remove incomplete sweep");
  }
  return absl::OkStatus();
}

absl::Status Store::RemoveIncompleteSweepsLocked() {
  std::vector<int64_t> incomplete;
  {
    Statement select(db_, "SELECT id FROM sweeps WHERE complete = 0");
    RETURN_IF_ERROR(select.status("find incomplete sweeps"));
    int rc;
    while ((rc = select.Step()) == SQLITE_ROW) incomplete.push_back(select.Int(0));
    if (rc != SQLITE_DONE) return SqliteError(db_, "find incomplete sweeps");
  }
  for (int64_t id : incomplete) {
    RETURN_IF_ERROR(InTransaction([&] {
      mu_.AssertHeld();
      return RemoveSweepRowsLocked(id);
    }));
    LogAt(LogPriority::kInfo)
        << "traind: removed sweep " << id
        << ", which the previous run was still inserting when it stopped (its submitter "
           "was never told of it)\n";
  }
  return absl::OkStatus();
}

absl::StatusOr<trainer::v1::Sweep> Store::ReadSweepRowLocked(int64_t sweep_id) {
  Statement select(db_, "SELECT sweep FROM sweeps WHERE id = ?");
  RETURN_IF_ERROR(select.status("read sweep"));
  select.Bind(1, sweep_id);
  const int rc = select.Step();
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("sweep ", sweep_id, " not found"));
  if (rc != SQLITE_ROW) return SqliteError(db_, "read sweep");
  trainer::v1::Sweep sweep;
  if (!sweep.ParseFromString(select.Blob(0))) {
    return absl::DataLossError(absl::StrCat("sweep ", sweep_id, ": stored record is corrupt"));
  }
  return sweep;
}

absl::StatusOr<trainer::v1::Sweep> Store::GetSweep(int64_t sweep_id) {
  FairMutexLock lock(&mu_);
  ASSIGN_OR_RETURN(trainer::v1::Sweep sweep, ReadSweepRowLocked(sweep_id));
  if (sweep.spec().has_search()) {
    // A search's members are added as they are proposed (AddSearchTrial): its record does not
    // list them, its trials do.
    Statement trials(db_, "SELECT job_id FROM search_trials WHERE sweep_id = ? ORDER BY trial");
    RETURN_IF_ERROR(trials.status("read trials"));
    trials.Bind(1, sweep_id);
    int step;
    while ((step = trials.Step()) == SQLITE_ROW) sweep.add_job_ids(trials.Int(0));
    if (step != SQLITE_DONE) return SqliteError(db_, "read trials");
    Statement done(db_, "SELECT done FROM searches WHERE sweep_id = ?");
    RETURN_IF_ERROR(done.status("read search"));
    done.Bind(1, sweep_id);
    if (done.Step() == SQLITE_ROW) sweep.set_search_done(done.Int(0) != 0);
  }
  return sweep;
}

absl::StatusOr<std::vector<Store::SweepWithStates>> Store::ListSweeps(int64_t before_id,
                                                                      int limit) {
  FairMutexLock lock(&mu_);
  Statement select(db_,
                   "SELECT id, sweep FROM sweeps WHERE id < ? AND complete = 1 ORDER BY id DESC "
                   "LIMIT ?");
  RETURN_IF_ERROR(select.status("list sweeps"));
  select.Bind(1, before_id > 0 ? before_id : INT64_MAX);
  select.Bind(2, limit);
  std::vector<SweepWithStates> sweeps;
  int rc;
  while ((rc = select.Step()) == SQLITE_ROW) {
    SweepWithStates row;
    if (!row.sweep.ParseFromString(select.Blob(1))) {
      return absl::DataLossError(
          absl::StrCat("sweep ", select.Int(0), ": stored record is corrupt"));
    }
    row.sweep.set_id(select.Int(0));
    sweeps.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "list sweeps");
  return sweeps;
}

absl::StatusOr<std::map<Job::State, int>> Store::CountSweepMembers(int64_t sweep_id) {
  FairMutexLock lock(&mu_);
  Statement count(db_, "SELECT state, COUNT(*) FROM jobs WHERE sweep_id = ? GROUP BY state");
  RETURN_IF_ERROR(count.status("count a sweep's members"));
  count.Bind(1, sweep_id);
  std::map<Job::State, int> members;
  int rc;
  while ((rc = count.Step()) == SQLITE_ROW) {
    members[static_cast<Job::State>(count.Int(0))] = static_cast<int>(count.Int(1));
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "count a sweep's members");
  return members;
}

absl::StatusOr<std::vector<std::string>> Store::DeleteSweep(int64_t sweep_id,
                                                            std::vector<int64_t>* deleted_jobs) {
  FairMutexLock lock(&mu_);
  return InTransaction([&]() -> absl::StatusOr<std::vector<std::string>> {
    mu_.AssertHeld();
    Statement members(db_, "SELECT id, job FROM jobs WHERE sweep_id = ?");
    RETURN_IF_ERROR(members.status("read sweep members"));
    members.Bind(1, sweep_id);
    ASSIGN_OR_RETURN(std::vector<Job> jobs, ReadJobRows(db_, members, "read sweep members"));
    ASSIGN_OR_RETURN(const auto dependents, DependentsLocked());
    std::vector<std::string> unused;
    for (const Job& job : jobs) {
      if (auto it = dependents.find(job.id()); it != dependents.end() && IsTerminal(job.state())) {
        return NotWhileNeeded(job.id(), it->second, "");
      }
      RETURN_IF_ERROR(DeleteJobLocked(job, &unused));
      if (deleted_jobs != nullptr) deleted_jobs->push_back(job.id());
    }
    for (const char* sql :
         {"DELETE FROM sweeps WHERE id = ?", "DELETE FROM searches WHERE sweep_id = ?",
          "DELETE FROM search_trials WHERE sweep_id = ?"}) {
      Statement remove(db_, sql);
      RETURN_IF_ERROR(remove.status("delete sweep"));
      remove.Bind(1, sweep_id);
      if (remove.Step() != SQLITE_DONE) return SqliteError(db_, "delete sweep");
    }
    return unused;
  });
}

}  // namespace traind
