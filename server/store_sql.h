// The store's SQL helpers, shared by its files (server/store*.cc) and by nothing else: SQLite's
// errors as canonical codes, a self-finalizing statement, and how a job's row is read.
#ifndef TRAIND_SERVER_STORE_SQL_H_
#define TRAIND_SERVER_STORE_SQL_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/timestamp.pb.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {
namespace store_sql {

// Members inserted per transaction of CreateSweep: about 5 ms of the store's lock on a 2-core VM
// (10,000 members took 1.1 s in one transaction: a member's row, blob uses and first event cost
// about 110 us), so other calls interleave.
inline constexpr size_t kSweepChunk = 48;
// Queued jobs read per hold of the store's lock (QueuedJobs).
inline constexpr int64_t kQueuePage = 256;
// The queued jobs the scheduler may start: not members of a sweep still being inserted.
inline constexpr char kSchedulable[] =
    "state = ? AND sweep_id NOT IN (SELECT id FROM sweeps WHERE complete = 0)";

// SQLite's last error on `db` as a canonical code: disk full RESOURCE_EXHAUSTED, read-only or
// unopenable FAILED_PRECONDITION, corrupt DATA_LOSS, busy UNAVAILABLE, else INTERNAL.
absl::Status SqliteError(sqlite3* db, const std::string& what);

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

// FAILED_PRECONDITION: job `job_id` cannot go while `dependents` (unfinished, --after or
// --init-from) need it; `how_to_force` ends the message.
absl::Status NotWhileNeeded(int64_t job_id, const std::vector<int64_t>& dependents,
                            const char* how_to_force);
// The uploaded blobs a spec names.
std::vector<std::string> BlobsOf(const trainer::v1::JobSpec& spec);
google::protobuf::Timestamp Now();
// A job's stored record; DATA_LOSS naming the job when it does not parse.
absl::StatusOr<trainer::v1::Job> ParseJob(const std::string& bytes, int64_t id);
// When a finished job ended (Unix seconds); its creation if it never recorded an end.
int64_t EndSeconds(const trainer::v1::Job& job);
// Every row of a `SELECT id, job ...` statement.
absl::StatusOr<std::vector<trainer::v1::Job>> ReadJobRows(sqlite3* db, Statement& select,
                                                          const char* what);

}  // namespace store_sql
}  // namespace traind

#endif  // TRAIND_SERVER_STORE_SQL_H_
