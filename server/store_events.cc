// The store's events: appended (one or a burst per transaction, seq assigned, the job's row
// folded), read back in order.
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

using store_sql::EndSeconds;
using store_sql::Now;
using store_sql::SqliteError;
using store_sql::Statement;
using trainer::v1::Job;
using trainer::v1::JobEvent;

absl::StatusOr<JobEvent> Store::AppendEvent(int64_t job_id, JobEvent event,
                                            std::optional<Job::State> expected_state) {
  absl::StatusOr<JobEvent> stored;
  {
    FairMutexLock lock(&mu_);
    stored = InTransaction([&] {
      mu_.AssertHeld();
      return AppendEventLocked(job_id, std::move(event), expected_state);
    });
  }
  if (stored.ok()) Tell(job_id, stored->seq());
  return stored;
}

void Store::Tell(int64_t job_id, int64_t seq) {
  if (listener_) listener_(job_id, seq);
}

absl::StatusOr<JobEvent> Store::AppendEventLocked(int64_t job_id, JobEvent event,
                                                  std::optional<Job::State> expected_state) {
  ASSIGN_OR_RETURN(Job job, GetJobLocked(job_id));
  if (expected_state.has_value() && job.state() != *expected_state) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " is ", Job::State_Name(job.state())));
  }
  if (job.id() == 0) job.set_id(job_id);
  std::vector<JobEvent> events;
  events.push_back(std::move(event));
  RETURN_IF_ERROR(InsertEventsLocked(job, events));
  RETURN_IF_ERROR(WriteJobRowLocked(job));
  return std::move(events.front());
}

absl::Status Store::AppendEvents(int64_t job_id, std::vector<JobEvent>* events) {
  absl::Status stored;
  {
    FairMutexLock lock(&mu_);
    stored = InTransaction([&]() -> absl::Status {
      mu_.AssertHeld();
      ASSIGN_OR_RETURN(Job job, GetJobLocked(job_id));
      if (job.id() == 0) job.set_id(job_id);
      RETURN_IF_ERROR(InsertEventsLocked(job, *events));
      return WriteJobRowLocked(job);
    });
  }
  RETURN_IF_ERROR(stored);
  for (const JobEvent& event : *events) Tell(job_id, event.seq());
  return absl::OkStatus();
}

absl::Status Store::InsertEventsLocked(Job& job, std::vector<JobEvent>& events) {
  Statement insert(db_, "INSERT INTO events(job_id, seq, payload) VALUES(?, ?, ?)");
  RETURN_IF_ERROR(insert.status("insert event"));
  int64_t bytes = 0;
  for (JobEvent& event : events) {
    event.set_seq(job.last_seq() + 1);
    if (!event.has_time()) *event.mutable_time() = Now();
    ApplyEvent(event, &job);
    insert.Reset();
    insert.Bind(1, job.id());
    insert.Bind(2, event.seq());
    const std::string payload = event.SerializeAsString();
    bytes += static_cast<int64_t>(payload.size());
    insert.Bind(3, payload);
    if (insert.Step() != SQLITE_DONE) return SqliteError(db_, "insert event");
  }
  Statement count(db_, "UPDATE jobs SET event_bytes = event_bytes + ? WHERE id = ?");
  RETURN_IF_ERROR(count.status("count event bytes"));
  count.Bind(1, bytes);
  count.Bind(2, job.id());
  if (count.Step() != SQLITE_DONE) return SqliteError(db_, "count event bytes");
  return absl::OkStatus();
}

absl::Status Store::WriteJobRowLocked(const Job& job) {
  // A new job has no folder (0 bytes, InsertJobLocked); one that runs writes its folder, which is
  // measured again once it ends (file_bytes -1 until then: storage_quota.h).
  Statement update(db_,
                   "UPDATE jobs SET state = ?, job = ?, end_seconds = ?, file_bytes = CASE WHEN ? "
                   "THEN -1 ELSE file_bytes END WHERE id = ?");
  RETURN_IF_ERROR(update.status("update job"));
  const bool ended = IsTerminal(job.state());
  update.Bind(1, static_cast<int64_t>(job.state()));
  update.Bind(2, job.SerializeAsString());
  update.Bind(3, ended ? EndSeconds(job) : int64_t{0});
  update.Bind(4, int64_t{job.state() == Job::RUNNING});
  update.Bind(5, job.id());
  if (update.Step() != SQLITE_DONE) return SqliteError(db_, "update job");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<JobEvent>> Store::ReadEvents(int64_t job_id, int64_t from_seq,
                                                        int limit) {
  FairMutexLock lock(&mu_);
  Statement select(db_,
                   "SELECT seq, payload FROM events WHERE job_id = ? AND seq >= ? ORDER BY seq "
                   "LIMIT ?");
  RETURN_IF_ERROR(select.status("read events"));
  select.Bind(1, job_id);
  select.Bind(2, from_seq);
  select.Bind(3, limit);
  std::vector<JobEvent> events;
  int rc;
  while ((rc = select.Step()) == SQLITE_ROW) {
    JobEvent event;
    if (!event.ParseFromString(select.Blob(1))) {
      return absl::DataLossError(
          absl::StrCat("job ", job_id, " event ", select.Int(0), ": stored record is corrupt"));
    }
    events.push_back(std::move(event));
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "read events");
  return events;
}

}  // namespace traind
