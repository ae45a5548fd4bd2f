#include "server/store.h"

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

namespace traind {

using trainer::v1::Job;
using trainer::v1::JobEvent;

namespace {

// Each entry takes the database from version i to i + 1. Never edit a released step: add one.
// server/testdata/traind_v1.db is a database written by version 1; store_test opens it.
constexpr const char* kMigrations[] = {
    // 0 -> 1: the walking skeleton.
    R"sql(
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  state INTEGER NOT NULL,
  job BLOB NOT NULL
);
CREATE INDEX jobs_by_state ON jobs(state, id);
CREATE TABLE events (
  job_id INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  payload BLOB NOT NULL,
  PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
)sql",
    // 1 -> 2: the queue (priorities, sweeps, idempotent submit, list filters) and settings.
    // The new job columns are filled from the job blobs after this runs (BackfillJobColumns).
    R"sql(
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN sweep_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN device TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX jobs_by_idempotency_key ON jobs(idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_by_sweep ON jobs(sweep_id, id);
CREATE INDEX jobs_queue ON jobs(state, priority DESC, id);
CREATE TABLE sweeps (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  sweep BLOB NOT NULL
);
CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
)sql",
    // 2 -> 3: who submitted each job, for the per-token queue limit (remote access).
    R"sql(
ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_by_owner ON jobs(owner, state);
)sql",
    // 3 -> 4: which uploaded blobs each job uses (model_file, data_file, init_from), so deleting
    // a job can tell which blobs nothing else needs. Jobs before this version used no blobs.
    R"sql(
CREATE TABLE job_blobs (
  job_id INTEGER NOT NULL,
  digest TEXT NOT NULL,
  PRIMARY KEY (job_id, digest)
) WITHOUT ROWID;
CREATE INDEX job_blobs_by_digest ON job_blobs(digest);
)sql",
    // 4 -> 5: idempotency keys are per owner: one token's key never returns another's job.
    R"sql(
DROP INDEX jobs_by_idempotency_key;
CREATE UNIQUE INDEX jobs_by_owner_and_key ON jobs(owner, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
)sql",
    // 5 -> 6: when each finished job ended (Unix seconds; 0 while it has not), for retention
    // (traind --retain-finished). Filled from the job blobs after this runs (BackfillEndTimes).
    R"sql(
ALTER TABLE jobs ADD COLUMN end_seconds INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_by_end ON jobs(end_seconds) WHERE end_seconds > 0;
)sql",
    // 6 -> 7: a sweep is inserted a chunk of members at a time (CreateSweep) so that no request
    // holds the store for long; until its last chunk commits it is incomplete: its members are
    // not scheduled or counted, and start-up removes a sweep a crash left incomplete.
    R"sql(
ALTER TABLE sweeps ADD COLUMN complete INTEGER NOT NULL DEFAULT 1;
)sql",
    // 7 -> 8: what each job holds, so that a quota check or a listing reads rows instead of
    // walking folders: its folder's bytes (0 for a new job, -1 from when it runs until it is
    // measured after it ended), and the bytes of its stored events (its log lines and metrics
    // count like its files); each owner's sums, kept by triggers, so that a quota check reads
    // one row however many jobs the owner has; and a token's listing in id order without
    // sorting all its jobs.
    R"sql(
ALTER TABLE jobs ADD COLUMN file_bytes INTEGER NOT NULL DEFAULT -1;
ALTER TABLE jobs ADD COLUMN event_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET event_bytes =
  (SELECT COALESCE(SUM(LENGTH(payload)), 0) FROM events WHERE events.job_id = jobs.id);
CREATE INDEX jobs_by_owner_and_id ON jobs(owner, id);
CREATE INDEX jobs_unmeasured ON jobs(owner) WHERE file_bytes < 0;
CREATE TABLE owner_bytes (
  owner TEXT PRIMARY KEY,
  file_bytes INTEGER NOT NULL DEFAULT 0,
  event_bytes INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO owner_bytes(owner, file_bytes, event_bytes)
  SELECT owner, SUM(MAX(file_bytes, 0)), SUM(event_bytes) FROM jobs GROUP BY owner;
CREATE TRIGGER owner_bytes_insert AFTER INSERT ON jobs BEGIN
  INSERT OR IGNORE INTO owner_bytes(owner) VALUES(NEW.owner);
  UPDATE owner_bytes SET file_bytes = file_bytes + MAX(NEW.file_bytes, 0),
                         event_bytes = event_bytes + NEW.event_bytes
    WHERE owner = NEW.owner;
END;
CREATE TRIGGER owner_bytes_update AFTER UPDATE OF file_bytes, event_bytes ON jobs BEGIN
  UPDATE owner_bytes
    SET file_bytes = file_bytes - MAX(OLD.file_bytes, 0) + MAX(NEW.file_bytes, 0),
        event_bytes = event_bytes - OLD.event_bytes + NEW.event_bytes
    WHERE owner = NEW.owner;
END;
CREATE TRIGGER owner_bytes_delete AFTER DELETE ON jobs BEGIN
  UPDATE owner_bytes SET file_bytes = file_bytes - MAX(OLD.file_bytes, 0),
                         event_bytes = event_bytes - OLD.event_bytes
    WHERE owner = OLD.owner;
END;
)sql",
};

// Members inserted per transaction of CreateSweep: about 5 ms of the store's lock on a 2-core VM
// (10,000 members took 1.1 s in one transaction: a member's row, blob uses and first event cost
// about 110 us), so other calls interleave.
constexpr size_t kSweepChunk = 48;
// Queued jobs read per hold of the store's lock (QueuedJobs).
constexpr int64_t kQueuePage = 256;
// The queued jobs the scheduler may start: not members of a sweep still being inserted.
constexpr char kSchedulable[] =
    "state = ? AND sweep_id NOT IN (SELECT id FROM sweeps WHERE complete = 0)";
constexpr int kSchemaVersion = sizeof(kMigrations) / sizeof(kMigrations[0]);

absl::Status SqliteError(sqlite3* db, const std::string& what) {
  const int code = sqlite3_errcode(db);
  const std::string message = absl::StrCat(what, ": ", sqlite3_errmsg(db));
  switch (code & 0xff) {
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(absl::StrCat(message, " (disk full)"));
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return absl::FailedPreconditionError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

// A prepared statement that finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) stmt_ = nullptr;
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  absl::Status status(const char* what) const {
    return stmt_ ? absl::OkStatus() : SqliteError(db_, what);
  }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void BindText(int i, const std::string& text) {
    sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void BindNull(int i) { sqlite3_bind_null(stmt_, i); }
  void Bind(int i, const std::string& blob) {
    sqlite3_bind_blob(stmt_, i, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(stmt_); }
  // Ready to Step again with new bindings (a statement run once per row of a batch).
  void Reset() { sqlite3_reset(stmt_); }
  int64_t Int(int col) { return sqlite3_column_int64(stmt_, col); }
  std::string Blob(int col) {
    const void* data = sqlite3_column_blob(stmt_, col);
    return std::string(static_cast<const char*>(data), sqlite3_column_bytes(stmt_, col));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// The uploaded blobs a spec names.
std::vector<std::string> BlobsOf(const trainer::v1::JobSpec& spec) {
  std::vector<std::string> digests;
  for (const std::string* value : {&spec.model_file(), &spec.data_file(), &spec.init_from()}) {
    if (absl::StartsWith(*value, "sha256:")) digests.push_back(*value);
  }
  for (const trainer::v1::ScriptFile& file : spec.script().files()) {
    digests.push_back(file.digest());
  }
  return digests;
}

google::protobuf::Timestamp Now() {
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  google::protobuf::Timestamp t;
  t.set_seconds(nanos / 1000000000);
  t.set_nanos(static_cast<int32_t>(nanos % 1000000000));
  return t;
}

absl::StatusOr<Job> ParseJob(const std::string& bytes, int64_t id) {
  Job job;
  if (!job.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("job ", id, ": stored record is corrupt"));
  }
  return job;
}

// When a finished job ended (Unix seconds); its creation if it never recorded an end.
int64_t EndSeconds(const Job& job) {
  const int64_t end = job.end_time().seconds();
  return end > 0 ? end : std::max<int64_t>(job.create_time().seconds(), 1);
}

// Every row of a `SELECT id, job ...` statement.
absl::StatusOr<std::vector<Job>> ReadJobRows(sqlite3* db, Statement& select, const char* what) {
  std::vector<Job> jobs;
  int rc;
  while ((rc = select.Step()) == SQLITE_ROW) {
    ASSIGN_OR_RETURN(Job job, ParseJob(select.Blob(1), select.Int(0)));
    job.set_id(select.Int(0));
    jobs.push_back(std::move(job));
  }
  if (rc != SQLITE_DONE) return SqliteError(db, what);
  return jobs;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    absl::Status status = SqliteError(db, absl::StrCat("cannot open ", path));
    sqlite3_close(db);
    return status;
  }
  std::unique_ptr<Store> store(new Store(db));
  FairMutexLock lock(&store->mu_);
  sqlite3_busy_timeout(db, 5000);
  // Pages freed by retention go back to the file system a few at a time (Compact), never by a
  // VACUUM that would hold the store for as long as it takes to copy the database.
  int64_t auto_vacuum = 0;
  {
    Statement mode(db, "PRAGMA auto_vacuum");
    RETURN_IF_ERROR(mode.status("auto_vacuum"));
    if (mode.Step() == SQLITE_ROW) auto_vacuum = mode.Int(0);
  }
  {
    if (auto_vacuum != 2) {
      // A new database takes it at once; an older one once, through one VACUUM at start-up.
      // VACUUM copies the database: on a nearly full disk it fails, and traind runs on without
      // giving pages back rather than refuse to start.
      if (absl::Status converted = store->Exec("PRAGMA auto_vacuum=INCREMENTAL"); converted.ok()) {
        if (absl::Status vacuumed = store->Exec("VACUUM"); !vacuumed.ok()) {
          LogAt(LogPriority::kWarning)
              << "traind: " << path << ": cannot convert to incremental vacuum ("
              << vacuumed.message() << "); retention will not shrink the file\n";
        }
      }
    }
  }
  RETURN_IF_ERROR(store->Exec("PRAGMA journal_mode=WAL"));
  RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=FULL"));
  {
    Statement check(db, "PRAGMA quick_check");
    RETURN_IF_ERROR(check.status("integrity check"));
    if (check.Step() != SQLITE_ROW || check.Blob(0) != "ok") {
      return absl::DataLossError(absl::StrCat(path, ": integrity check failed"));
    }
  }
  int64_t version = 0;
  {
    Statement v(db, "PRAGMA user_version");
    RETURN_IF_ERROR(v.status("schema version"));
    if (v.Step() == SQLITE_ROW) version = v.Int(0);
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": schema version ", version,
                                                      " is newer than this traind understands (",
                                                      kSchemaVersion, "); upgrade traind"));
  }
  for (int64_t from = version; from < kSchemaVersion; ++from) {
    RETURN_IF_ERROR(store->Exec("BEGIN IMMEDIATE"));
    absl::Status status = store->Exec(kMigrations[from]);
    if (status.ok() && from == 1) status = store->BackfillJobColumns();
    if (status.ok() && from == 5) status = store->BackfillEndTimes();
    if (status.ok()) status = store->Exec(absl::StrCat("PRAGMA user_version=", from + 1).c_str());
    if (status.ok()) status = store->Exec("COMMIT");
    if (!status.ok()) {
      (void)store->Exec("ROLLBACK");
      return absl::Status(status.code(), absl::StrCat("migrating ", path, " from schema version ",
                                                      from, ": ", status.message()));
    }
  }
  RETURN_IF_ERROR(store->RemoveIncompleteSweepsLocked());
  return store;
}

Store::~Store() { sqlite3_close(db_); }

absl::Status Store::Exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    absl::Status status = SqliteError(db_, sql);
    sqlite3_free(error);
    return status;
  }
  return absl::OkStatus();
}

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

absl::StatusOr<trainer::v1::Sweep> Store::GetSweep(int64_t sweep_id) {
  FairMutexLock lock(&mu_);
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

absl::StatusOr<std::string> Store::GetSetting(const std::string& key) {
  FairMutexLock lock(&mu_);
  Statement select(db_, "SELECT value FROM settings WHERE key = ?");
  RETURN_IF_ERROR(select.status("read setting"));
  select.BindText(1, key);
  const int rc = select.Step();
  if (rc == SQLITE_DONE) return std::string();
  if (rc != SQLITE_ROW) return SqliteError(db_, "read setting");
  return select.Blob(0);
}

absl::Status Store::SetSetting(const std::string& key, const std::string& value) {
  FairMutexLock lock(&mu_);
  Statement upsert(db_,
                   "INSERT INTO settings(key, value) VALUES(?, ?) "
                   "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  RETURN_IF_ERROR(upsert.status("write setting"));
  upsert.BindText(1, key);
  upsert.BindText(2, value);
  if (upsert.Step() != SQLITE_DONE) return SqliteError(db_, "write setting");
  return absl::OkStatus();
}

absl::Status Store::BackfillJobColumns() {
  std::vector<std::pair<int64_t, Job>> jobs;
  {
    Statement select(db_, "SELECT id, job FROM jobs");
    RETURN_IF_ERROR(select.status("backfill"));
    int rc;
    while ((rc = select.Step()) == SQLITE_ROW) {
      ASSIGN_OR_RETURN(Job job, ParseJob(select.Blob(1), select.Int(0)));
      jobs.emplace_back(select.Int(0), std::move(job));
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, "backfill");
  }
  for (const auto& [id, job] : jobs) {
    Statement update(db_, "UPDATE jobs SET model = ?, device = ? WHERE id = ?");
    RETURN_IF_ERROR(update.status("backfill"));
    update.BindText(1, job.spec().model());
    update.BindText(2, job.spec().device());
    update.Bind(3, id);
    if (update.Step() != SQLITE_DONE) return SqliteError(db_, "backfill");
  }
  return absl::OkStatus();
}

absl::Status Store::BackfillEndTimes() {
  std::vector<std::pair<int64_t, int64_t>> ends;
  {
    Statement select(db_, "SELECT id, job FROM jobs");
    RETURN_IF_ERROR(select.status("backfill end times"));
    int rc;
    while ((rc = select.Step()) == SQLITE_ROW) {
      ASSIGN_OR_RETURN(Job job, ParseJob(select.Blob(1), select.Int(0)));
      if (IsTerminal(job.state())) ends.emplace_back(select.Int(0), EndSeconds(job));
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, "backfill end times");
  }
  for (const auto& [id, end] : ends) {
    Statement update(db_, "UPDATE jobs SET end_seconds = ? WHERE id = ?");
    RETURN_IF_ERROR(update.status("backfill end times"));
    update.Bind(1, end);
    update.Bind(2, id);
    if (update.Step() != SQLITE_DONE) return SqliteError(db_, "backfill end times");
  }
  return absl::OkStatus();
}

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

absl::StatusOr<int64_t> Store::FreePages() {
  FairMutexLock lock(&mu_);
  Statement count(db_, "PRAGMA freelist_count");
  RETURN_IF_ERROR(count.status("free pages"));
  if (count.Step() != SQLITE_ROW) return SqliteError(db_, "free pages");
  return count.Int(0);
}

namespace {

absl::Status NotWhileNeeded(int64_t job_id, const std::vector<int64_t>& dependents,
                            const char* how_to_force) {
  return absl::FailedPreconditionError(absl::StrCat(
      "job ", job_id, " is needed by unfinished job", dependents.size() == 1 ? " " : "s ",
      absl::StrJoin(dependents, ", "), " (--after or --init-from); cancel or delete ",
      dependents.size() == 1 ? "it" : "them", " first", how_to_force));
}

}  // namespace

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
    Statement remove(db_, "DELETE FROM sweeps WHERE id = ?");
    RETURN_IF_ERROR(remove.status("delete sweep"));
    remove.Bind(1, sweep_id);
    if (remove.Step() != SQLITE_DONE) return SqliteError(db_, "delete sweep");
    return unused;
  });
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

absl::Status Store::Compact(int max_pages) {
  FairMutexLock lock(&mu_);
  RETURN_IF_ERROR(Exec(absl::StrCat("PRAGMA incremental_vacuum(", max_pages, ")").c_str()));
  // The WAL keeps its high-water size until truncated; a busy reader just makes this a no-op.
  return Exec("PRAGMA wal_checkpoint(TRUNCATE)");
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
