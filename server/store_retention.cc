// The store's disk use and retention: what jobs and owners hold, what finished when, and
// deleting jobs no unfinished job needs.
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

using store_sql::BlobsOf;
using store_sql::NotWhileNeeded;
using store_sql::ReadJobRows;
using store_sql::SqliteError;
using store_sql::Statement;
using trainer::v1::Job;
using trainer::v1::JobEvent;

absl::StatusOr<Store::OwnerDiskUse> Store::DiskUseOfOwner(const std::string& owner) {
  FairMutexLock lock(&mu_);
  OwnerDiskUse use;
  {
    Statement sums(db_, "SELECT file_bytes, event_bytes FROM owner_bytes WHERE owner = ?");
    RETURN_IF_ERROR(sums.status("an owner's bytes"));
    sums.BindText(1, owner);
    const int rc = sums.Step();
    if (rc == SQLITE_ROW) {
      use.measured_file_bytes = sums.Int(0);
      use.event_bytes = sums.Int(1);
    } else if (rc != SQLITE_DONE) {
      return SqliteError(db_, "an owner's bytes");
    }
  }
  Statement select(db_, "SELECT id, end_seconds > 0 FROM jobs WHERE owner = ? AND file_bytes < 0");
  RETURN_IF_ERROR(select.status("an owner's unmeasured jobs"));
  select.BindText(1, owner);
  int rc;
  while ((rc = select.Step()) == SQLITE_ROW) {
    use.unmeasured.push_back({select.Int(0), select.Int(1) != 0});
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "an owner's unmeasured jobs");
  return use;
}

absl::StatusOr<std::map<int64_t, Store::DiskUse>> Store::DiskUseOf(
    const std::vector<int64_t>& job_ids) {
  FairMutexLock lock(&mu_);
  Statement select(db_, "SELECT file_bytes, event_bytes, end_seconds > 0 FROM jobs WHERE id = ?");
  RETURN_IF_ERROR(select.status("a job's bytes"));
  std::map<int64_t, DiskUse> uses;
  for (int64_t id : job_ids) {
    select.Reset();
    select.Bind(1, id);
    const int rc = select.Step();
    if (rc == SQLITE_DONE) continue;
    if (rc != SQLITE_ROW) return SqliteError(db_, "a job's bytes");
    uses[id] = DiskUse{select.Int(0), select.Int(1), select.Int(2) != 0};
  }
  return uses;
}

absl::Status Store::SetFileBytes(int64_t job_id, int64_t bytes) {
  FairMutexLock lock(&mu_);
  Statement update(db_, "UPDATE jobs SET file_bytes = ? WHERE id = ? AND end_seconds > 0");
  RETURN_IF_ERROR(update.status("record a job's file bytes"));
  update.Bind(1, bytes);
  update.Bind(2, job_id);
  if (update.Step() != SQLITE_DONE) return SqliteError(db_, "record a job's file bytes");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> Store::DeleteJob(int64_t job_id, bool force) {
  FairMutexLock lock(&mu_);
  return InTransaction([&]() -> absl::StatusOr<std::vector<std::string>> {
    mu_.AssertHeld();
    ASSIGN_OR_RETURN(Job job, GetJobLocked(job_id));
    if (job.sweep_id() != 0) {
      return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " is a member of sweep ",
                                                        job.sweep_id(), ", whose report needs it"));
    }
    if (!force && IsTerminal(job.state())) {
      ASSIGN_OR_RETURN(const auto dependents, DependentsLocked());
      if (auto it = dependents.find(job_id); it != dependents.end()) {
        return NotWhileNeeded(job_id, it->second, ", or delete with --force (they will fail)");
      }
    }
    std::vector<std::string> unused;
    RETURN_IF_ERROR(DeleteJobLocked(job, &unused));
    return unused;
  });
}

absl::Status Store::DeleteJobLocked(const Job& job, std::vector<std::string>* unused_blobs) {
  if (!IsTerminal(job.state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job.id(), " is ", Job::State_Name(job.state()), "; cancel it first"));
  }
  for (const char* sql : {"DELETE FROM events WHERE job_id = ?", "DELETE FROM jobs WHERE id = ?",
                          "DELETE FROM job_blobs WHERE job_id = ?"}) {
    Statement remove(db_, sql);
    RETURN_IF_ERROR(remove.status("delete job"));
    remove.Bind(1, job.id());
    if (remove.Step() != SQLITE_DONE) return SqliteError(db_, "delete job");
  }
  for (const std::string& digest : BlobsOf(job.spec())) {
    Statement users(db_, "SELECT COUNT(*) FROM job_blobs WHERE digest = ?");
    RETURN_IF_ERROR(users.status("count blob users"));
    users.BindText(1, digest);
    if (users.Step() != SQLITE_ROW) return SqliteError(db_, "count blob users");
    if (users.Int(0) == 0 &&
        std::find(unused_blobs->begin(), unused_blobs->end(), digest) == unused_blobs->end()) {
      unused_blobs->push_back(digest);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Store::Expired> Store::FinishedBefore(int64_t end_seconds, int limit) {
  FairMutexLock lock(&mu_);
  Expired expired;
  {
    Statement jobs(db_,
                   "SELECT id FROM jobs WHERE end_seconds > 0 AND end_seconds < ? AND sweep_id = 0 "
                   "ORDER BY end_seconds LIMIT ?");
    RETURN_IF_ERROR(jobs.status("find finished jobs"));
    jobs.Bind(1, end_seconds);
    jobs.Bind(2, static_cast<int64_t>(limit));
    int rc;
    while ((rc = jobs.Step()) == SQLITE_ROW) expired.job_ids.push_back(jobs.Int(0));
    if (rc != SQLITE_DONE) return SqliteError(db_, "find finished jobs");
  }
  // A sweep goes whole, once every member has ended before the cutoff: its report needs them all.
  Statement sweeps(db_,
                   "SELECT sweep_id FROM jobs WHERE sweep_id > 0 GROUP BY sweep_id "
                   "HAVING MIN(end_seconds) > 0 AND MAX(end_seconds) < ? LIMIT ?");
  RETURN_IF_ERROR(sweeps.status("find finished sweeps"));
  sweeps.Bind(1, end_seconds);
  sweeps.Bind(2, static_cast<int64_t>(limit));
  int rc;
  while ((rc = sweeps.Step()) == SQLITE_ROW) expired.sweep_ids.push_back(sweeps.Int(0));
  if (rc != SQLITE_DONE) return SqliteError(db_, "find finished sweeps");
  return expired;
}

absl::StatusOr<std::set<int64_t>> Store::NeededByUnfinishedJobs() {
  FairMutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const auto dependents, DependentsLocked());
  std::set<int64_t> needed;
  for (const auto& [id, unused] : dependents) needed.insert(id);
  return needed;
}

absl::StatusOr<std::map<int64_t, std::vector<int64_t>>> Store::DependentsLocked() {
  Statement select(db_, "SELECT id, job FROM jobs WHERE state IN (?, ?)");
  RETURN_IF_ERROR(select.status("read unfinished jobs"));
  select.Bind(1, static_cast<int64_t>(Job::QUEUED));
  select.Bind(2, static_cast<int64_t>(Job::RUNNING));
  ASSIGN_OR_RETURN(std::vector<Job> jobs, ReadJobRows(db_, select, "read unfinished jobs"));
  std::map<int64_t, std::vector<int64_t>> dependents;
  for (const Job& job : jobs) {
    for (int64_t after : job.after()) dependents[after].push_back(job.id());
    const std::string& init = job.spec().init_from();
    if (!init.empty() && !absl::StartsWith(init, "sha256:")) {
      int64_t id = 0;
      if (absl::SimpleAtoi(init.substr(0, init.find(':')), &id)) {
        std::vector<int64_t>& needing = dependents[id];
        if (needing.empty() || needing.back() != job.id()) needing.push_back(job.id());  // once
      }
    }
  }
  return dependents;
}

}  // namespace traind
