// The store's jobs: created (idempotently, within the owner's queue quota), read, listed, the
// queue the scheduler reads, priorities.
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
using store_sql::kQueuePage;
using store_sql::kSchedulable;
using store_sql::ParseJob;
using store_sql::ReadJobRows;
using store_sql::SqliteError;
using store_sql::Statement;
using trainer::v1::Job;
using trainer::v1::JobEvent;

absl::Status Store::CheckQueueQuotaLocked(const std::string& owner, int adding, int max_queued) {
  if (max_queued <= 0) return absl::OkStatus();
  Statement count(db_, "SELECT COUNT(*) FROM jobs WHERE owner = ? AND state = ?");
  RETURN_IF_ERROR(count.status("count queued jobs"));
  count.BindText(1, owner);
  count.Bind(2, static_cast<int64_t>(Job::QUEUED));
  if (count.Step() != SQLITE_ROW) return SqliteError(db_, "count queued jobs");
  auto pending = pending_sweep_members_.find(owner);  // sweeps being inserted count in full
  const int64_t queued =
      count.Int(0) + (pending == pending_sweep_members_.end() ? 0 : pending->second);
  if (queued + adding > max_queued) {
    return absl::ResourceExhaustedError(
        absl::StrCat("queued jobs: '", owner, "' has ", queued, " queued and asked for ", adding,
                     " more; the limit is ", max_queued, " (traind --max-queued-per-token)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Job> Store::CreateJob(const Job& job, bool* existed, int max_queued) {
  bool found = false;
  absl::StatusOr<Job> created = InsertOrFindJob(job, &found, max_queued);
  if (existed != nullptr) *existed = found;
  if (created.ok() && !found) Tell(created->id(), created->last_seq());
  return created;
}

absl::StatusOr<Job> Store::InsertOrFindJob(const Job& job, bool* existed, int max_queued) {
  FairMutexLock lock(&mu_);
  *existed = false;
  auto create = [&]() -> absl::StatusOr<Job> {
    mu_.AssertHeld();  // InTransaction runs it under the lock the caller holds
    if (!job.idempotency_key().empty()) {
      Statement find(db_, "SELECT id FROM jobs WHERE owner = ? AND idempotency_key = ?");
      RETURN_IF_ERROR(find.status("find job by key"));
      find.BindText(1, job.owner());
      find.BindText(2, job.idempotency_key());
      if (find.Step() == SQLITE_ROW) {
        *existed = true;
        return GetJobLocked(find.Int(0));
      }
    }
    RETURN_IF_ERROR(CheckQueueQuotaLocked(job.owner(), 1, max_queued));
    ASSIGN_OR_RETURN(const int64_t id, InsertJobLocked(job));
    return GetJobLocked(id);
  };
  return InTransaction(create);
}

absl::StatusOr<int64_t> Store::InsertJobLocked(const Job& prototype) {
  Job job = prototype;
  job.clear_id();
  job.set_state(Job::QUEUED);
  Statement insert(db_,
                   "INSERT INTO jobs(state, job, priority, sweep_id, model, device, "
                   "idempotency_key, owner, file_bytes) VALUES(?, ?, ?, ?, ?, ?, ?, ?, 0)");
  RETURN_IF_ERROR(insert.status("insert job"));
  insert.Bind(1, static_cast<int64_t>(Job::QUEUED));
  insert.Bind(2, job.SerializeAsString());
  insert.Bind(3, static_cast<int64_t>(job.priority()));
  insert.Bind(4, job.sweep_id());
  insert.BindText(5, job.spec().model());
  insert.BindText(6, job.spec().device());
  if (job.idempotency_key().empty()) {
    insert.BindNull(7);
  } else {
    insert.BindText(7, job.idempotency_key());
  }
  insert.BindText(8, job.owner());
  if (insert.Step() != SQLITE_DONE) return SqliteError(db_, "insert job");
  const int64_t id = sqlite3_last_insert_rowid(db_);
  for (const std::string& digest : BlobsOf(job.spec())) {
    Statement uses(db_, "INSERT OR IGNORE INTO job_blobs(job_id, digest) VALUES(?, ?)");
    RETURN_IF_ERROR(uses.status("insert job blob"));
    uses.Bind(1, id);
    uses.BindText(2, digest);
    if (uses.Step() != SQLITE_DONE) return SqliteError(db_, "insert job blob");
  }
  JobEvent event;
  event.mutable_state_change()->set_state(Job::QUEUED);
  RETURN_IF_ERROR(AppendEventLocked(id, std::move(event), std::nullopt).status());
  return id;
}

absl::StatusOr<std::vector<Job>> Store::QueuedJobs() {
  // In pages, releasing the lock between them: 10,000 queued jobs take tens of milliseconds to
  // read and parse, which other calls should not wait behind. A page starts after the last row
  // of the one before in queue order; a job whose priority changed in between may come twice.
  static const std::string first_page = absl::StrCat(
      "SELECT id, job FROM jobs WHERE ", kSchedulable, " ORDER BY priority DESC, id LIMIT ?");
  static const std::string next_page =
      absl::StrCat("SELECT id, job FROM jobs WHERE ", kSchedulable,
                   " AND (priority < ? OR (priority = ? AND id > ?)) "
                   "ORDER BY priority DESC, id LIMIT ?");
  std::vector<Job> queued;
  std::set<int64_t> seen;
  // Where the next page starts: the last row read, not the last kept (a page of repeats
  // would otherwise be read again for ever).
  std::optional<std::pair<int64_t, int64_t>> after;  // (priority, id)
  while (true) {
    FairMutexLock lock(&mu_);
    const bool first = !after.has_value();
    Statement select(db_, first ? first_page.c_str() : next_page.c_str());
    RETURN_IF_ERROR(select.status("queued jobs"));
    select.Bind(1, static_cast<int64_t>(Job::QUEUED));
    if (first) {
      select.Bind(2, kQueuePage);
    } else {
      select.Bind(2, after->first);
      select.Bind(3, after->first);
      select.Bind(4, after->second);
      select.Bind(5, kQueuePage);
    }
    ASSIGN_OR_RETURN(std::vector<Job> page, ReadJobRows(db_, select, "queued jobs"));
    if (!page.empty()) after = {static_cast<int64_t>(page.back().priority()), page.back().id()};
    for (Job& job : page) {
      if (seen.insert(job.id()).second) queued.push_back(std::move(job));
    }
    if (static_cast<int64_t>(page.size()) < kQueuePage) return queued;
  }
}

absl::StatusOr<int64_t> Store::CountQueued() {
  FairMutexLock lock(&mu_);
  static const std::string sql = absl::StrCat("SELECT COUNT(*) FROM jobs WHERE ", kSchedulable);
  Statement count(db_, sql.c_str());
  RETURN_IF_ERROR(count.status("count queued jobs"));
  count.Bind(1, static_cast<int64_t>(Job::QUEUED));
  if (count.Step() != SQLITE_ROW) return SqliteError(db_, "count queued jobs");
  return count.Int(0);
}

absl::StatusOr<Job> Store::SetPriority(int64_t job_id, int32_t priority) {
  FairMutexLock lock(&mu_);
  return InTransaction([&]() -> absl::StatusOr<Job> {
    mu_.AssertHeld();
    ASSIGN_OR_RETURN(Job job, GetJobLocked(job_id));
    if (job.state() != Job::QUEUED) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job_id, " is ", Job::State_Name(job.state()),
                       "; only a queued job's priority can change"));
    }
    job.set_priority(priority);
    Statement update(db_, "UPDATE jobs SET priority = ?, job = ? WHERE id = ? AND state = ?");
    RETURN_IF_ERROR(update.status("set priority"));
    update.Bind(1, static_cast<int64_t>(priority));
    update.Bind(2, job.SerializeAsString());
    update.Bind(3, job_id);
    update.Bind(4, static_cast<int64_t>(Job::QUEUED));
    if (update.Step() != SQLITE_DONE) return SqliteError(db_, "set priority");
    return job;
  });
}

absl::StatusOr<std::map<Job::State, int64_t>> Store::CountJobsByState() {
  FairMutexLock lock(&mu_);
  Statement select(db_, "SELECT state, COUNT(*) FROM jobs GROUP BY state");
  RETURN_IF_ERROR(select.status("count jobs"));
  std::map<Job::State, int64_t> counts;
  int rc;
  while ((rc = select.Step()) == SQLITE_ROW) {
    const int64_t state = select.Int(0);
    if (Job::State_IsValid(static_cast<int>(state))) {
      counts[static_cast<Job::State>(state)] = select.Int(1);
    }
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "count jobs");
  return counts;
}

absl::StatusOr<Job> Store::GetJob(int64_t job_id) {
  FairMutexLock lock(&mu_);
  return GetJobLocked(job_id);
}

absl::StatusOr<Job> Store::GetJobLocked(int64_t job_id) {
  Statement select(db_, "SELECT job FROM jobs WHERE id = ?");
  RETURN_IF_ERROR(select.status("read job"));
  select.Bind(1, job_id);
  const int rc = select.Step();
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  if (rc != SQLITE_ROW) return SqliteError(db_, "read job");
  ASSIGN_OR_RETURN(Job job, ParseJob(select.Blob(0), job_id));
  job.set_id(job_id);
  return job;
}

absl::StatusOr<std::vector<Job>> Store::ListJobs(const JobFilter& filter, int64_t before_id,
                                                 int limit) {
  FairMutexLock lock(&mu_);
  const std::vector<Job::State>& states = filter.states;
  std::string sql = "SELECT id, job FROM jobs WHERE id < ?";
  if (filter.sweep_id > 0) sql += " AND sweep_id = ?";
  if (!filter.model.empty()) sql += " AND model = ?";
  if (!filter.device.empty()) sql += " AND device = ?";
  if (filter.owner.has_value()) sql += " AND owner = ?";
  if (!states.empty()) {
    sql += " AND state IN (";
    for (size_t i = 0; i < states.size(); ++i) sql += i ? ",?" : "?";
    sql += ")";
  }
  sql += " ORDER BY id DESC LIMIT ?";
  Statement select(db_, sql.c_str());
  RETURN_IF_ERROR(select.status("list jobs"));
  int param = 1;
  select.Bind(param++, before_id > 0 ? before_id : INT64_MAX);
  if (filter.sweep_id > 0) select.Bind(param++, filter.sweep_id);
  if (!filter.model.empty()) select.BindText(param++, filter.model);
  if (!filter.device.empty()) select.BindText(param++, filter.device);
  if (filter.owner.has_value()) select.BindText(param++, *filter.owner);
  for (Job::State state : states) select.Bind(param++, static_cast<int64_t>(state));
  select.Bind(param, limit);
  return ReadJobRows(db_, select, "list jobs");
}

absl::StatusOr<std::optional<Job>> Store::OldestInState(Job::State state) {
  FairMutexLock lock(&mu_);
  Statement select(db_, "SELECT id, job FROM jobs WHERE state = ? ORDER BY id LIMIT 1");
  RETURN_IF_ERROR(select.status("find job"));
  select.Bind(1, static_cast<int64_t>(state));
  const int rc = select.Step();
  if (rc == SQLITE_DONE) return std::optional<Job>();
  if (rc != SQLITE_ROW) return SqliteError(db_, "find job");
  ASSIGN_OR_RETURN(Job job, ParseJob(select.Blob(1), select.Int(0)));
  job.set_id(select.Int(0));
  return std::optional<Job>(std::move(job));
}

}  // namespace traind
