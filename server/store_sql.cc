#include "server/store_sql.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace traind {
namespace store_sql {

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

absl::Status NotWhileNeeded(int64_t job_id, const std::vector<int64_t>& dependents,
                            const char* how_to_force) {
  return absl::FailedPreconditionError(absl::StrCat(
      "job ", job_id, " is needed by unfinished job", dependents.size() == 1 ? " " : "s ",
      absl::StrJoin(dependents, ", "), " (--after or --init-from); cancel or delete ",
      dependents.size() == 1 ? "it" : "them", " first", how_to_force));
}

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

absl::StatusOr<trainer::v1::Job> ParseJob(const std::string& bytes, int64_t id) {
  trainer::v1::Job job;
  if (!job.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("job ", id, ": stored record is corrupt"));
  }
  return job;
}

int64_t EndSeconds(const trainer::v1::Job& job) {
  const int64_t end = job.end_time().seconds();
  return end > 0 ? end : std::max<int64_t>(job.create_time().seconds(), 1);
}

absl::StatusOr<std::vector<trainer::v1::Job>> ReadJobRows(sqlite3* db, Statement& select,
                                                          const char* what) {
  std::vector<trainer::v1::Job> jobs;
  int rc;
  while ((rc = select.Step()) == SQLITE_ROW) {
    ASSIGN_OR_RETURN(trainer::v1::Job job, ParseJob(select.Blob(1), select.Int(0)));
    job.set_id(select.Int(0));
    jobs.push_back(std::move(job));
  }
  if (rc != SQLITE_DONE) return SqliteError(db, what);
  return jobs;
}

}  // namespace store_sql
}  // namespace traind
