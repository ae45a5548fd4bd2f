// The store's database: opening it, its schema and migrations, settings, upkeep.
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
#include "server/store_sql.h"

namespace traind {

using store_sql::EndSeconds;
using store_sql::ParseJob;
using store_sql::SqliteError;
using store_sql::Statement;
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
    // 8 -> 9: searches (SweepSpec.search): the searcher's state (search/asha.h's text) beside
    // its sweep, and each trial proposed: its job and what was drawn for it, so that a restarted
    // traind proposes none of them again.
    R"sql(
CREATE TABLE searches (
  sweep_id INTEGER PRIMARY KEY,
  state TEXT NOT NULL,
  done INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE search_trials (
  sweep_id INTEGER NOT NULL,
  trial INTEGER NOT NULL,
  job_id INTEGER NOT NULL,
  params TEXT NOT NULL,
  PRIMARY KEY (sweep_id, trial)
) WITHOUT ROWID;
)sql",
    // 9 -> 10: how many of a search's trials share a GPU once one was measured alone
    // (server/trial_packing.h), and why. Kept, not measured again: a restarted traind packs as
    // before (a packed trial's reading counts its neighbours' work too), and the report still
    // says it once the search is over.
    R"sql(
ALTER TABLE searches ADD COLUMN pack_width INTEGER NOT NULL DEFAULT 0;
ALTER TABLE searches ADD COLUMN pack_why TEXT NOT NULL DEFAULT '';
)sql",
    // 10 -> 11: whether that width was decided for trials side by side through traind's MPS
    // daemon (it holds only while traind runs one). Decisions stored before said so only in
    // their words.
    R"sql(
ALTER TABLE searches ADD COLUMN pack_side_by_side INTEGER NOT NULL DEFAULT 0;
UPDATE searches SET pack_side_by_side = 1
  WHERE pack_width > 1 AND instr(pack_why, ' side by side (MPS)') > 0;
)sql",
};

constexpr int kSchemaVersion = sizeof(kMigrations) / sizeof(kMigrations[0]);

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

absl::StatusOr<int64_t> Store::FreePages() {
  FairMutexLock lock(&mu_);
  Statement count(db_, "PRAGMA freelist_count");
  RETURN_IF_ERROR(count.status("free pages"));
  if (count.Step() != SQLITE_ROW) return SqliteError(db_, "free pages");
  return count.Int(0);
}

absl::Status Store::Compact(int max_pages) {
  FairMutexLock lock(&mu_);
  RETURN_IF_ERROR(Exec(absl::StrCat("PRAGMA incremental_vacuum(", max_pages, ")").c_str()));
  // The WAL keeps its high-water size until truncated; a busy reader just makes this a no-op.
  return Exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

}  // namespace traind
