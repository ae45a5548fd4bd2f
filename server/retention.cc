#include "server/retention.h"

#include <algorithm>
#include <iostream>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/log_priority.h"
#include "common/status_macros.h"
#include "server/job_files.h"

namespace traind {

namespace {
constexpr int kBatch = 50;  // jobs or sweeps per query; each deleted in its own transaction
constexpr int kCompactPages = 2048;  // pages given back per batch (8 MiB at 4 KiB pages)
}  // namespace

Retention::Retention(Store* store, BlobStore* blobs, Options options)
    : store_(store), blobs_(blobs), options_(std::move(options)) {}

Retention::~Retention() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Retention::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Retention::Loop() {
  while (true) {
    absl::StatusOr<Pruned> pruned = PruneOnce(absl::Now());
    if (!pruned.ok()) {
      LogAt(LogPriority::kError) << "traind: retention: " << pruned.status() << "\n";
    } else if (pruned->jobs + pruned->sweeps > 0) {
      LogAt(LogPriority::kInfo) << "traind: retention: deleted " << pruned->jobs << " jobs ("
                                << pruned->sweeps << " whole sweeps) that ended over "
                                << absl::FormatDuration(options_.keep) << " ago, and "
                                << pruned->blobs << " uploads nothing used any more\n";
    }
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.every)) return;
  }
}

absl::Status Retention::RemoveFiles(int64_t job_id, const std::string& owner,
                                    const std::vector<std::string>& unused_blobs, Pruned* pruned) {
  // The rows are gone (committed); files follow. A crash in between leaves files no job names,
  // never a job without its files (as DeleteJob).
  RETURN_IF_ERROR(RemoveJobFiles(options_.jobs_dir, job_id));
  for (const std::string& digest : unused_blobs) {
    ASSIGN_OR_RETURN(const bool removed, blobs_->Release(digest, owner));
    if (removed) ++pruned->blobs;
  }
  return absl::OkStatus();
}

absl::StatusOr<Retention::Pruned> Retention::PruneOnce(absl::Time now) {
  const int64_t cutoff = absl::ToUnixSeconds(now - options_.keep);
  Pruned pruned;
  // What queued or running jobs still need (dependencies, init_from weights) stays, however old.
  ASSIGN_OR_RETURN(const std::set<int64_t> needed, store_->NeededByUnfinishedJobs());
  std::set<int64_t> kept;         // needed jobs: skipped, so asked for again each batch
  std::set<int64_t> kept_sweeps;  // sweeps with a needed member: they stay whole
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
    }
    ASSIGN_OR_RETURN(Store::Expired expired,
                     store_->FinishedBefore(
                         cutoff, kBatch + static_cast<int>(kept.size() + kept_sweeps.size())));
    expired.job_ids.erase(std::remove_if(expired.job_ids.begin(), expired.job_ids.end(),
                                         [&](int64_t id) {
                                           if (needed.count(id) == 0) return false;
                                           kept.insert(id);
                                           return true;
                                         }),
                          expired.job_ids.end());
    // A sweep goes whole or not at all (its report needs every member): it stays while a queued or
    // running job depends on one of its members or starts from a member's weights.
    std::vector<int64_t> sweeps;
    for (int64_t sweep : expired.sweep_ids) {
      if (kept_sweeps.count(sweep) > 0) continue;
      absl::StatusOr<trainer::v1::Sweep> row = store_->GetSweep(sweep);
      if (absl::IsNotFound(row.status())) continue;
      RETURN_IF_ERROR(row.status());
      const bool member_needed = std::any_of(row->job_ids().begin(), row->job_ids().end(),
                                             [&](int64_t id) { return needed.count(id) > 0; });
      if (member_needed) {
        kept_sweeps.insert(sweep);
      } else {
        sweeps.push_back(sweep);
      }
    }
    if (expired.job_ids.empty() && sweeps.empty()) break;
    for (int64_t id : expired.job_ids) {
      absl::StatusOr<trainer::v1::Job> job = store_->GetJob(id);
      if (absl::IsNotFound(job.status())) continue;  // deleted meanwhile (trainctl delete)
      RETURN_IF_ERROR(job.status());
      absl::StatusOr<std::vector<std::string>> unused = store_->DeleteJob(id);
      if (absl::IsNotFound(unused.status())) continue;
      RETURN_IF_ERROR(unused.status());
      ++pruned.jobs;
      RETURN_IF_ERROR(RemoveFiles(id, job->owner(), *unused, &pruned));
    }
    for (int64_t sweep : sweeps) {
      ASSIGN_OR_RETURN(const trainer::v1::Sweep sweep_row, store_->GetSweep(sweep));
      std::vector<int64_t> members;
      ASSIGN_OR_RETURN(std::vector<std::string> unused, store_->DeleteSweep(sweep, &members));
      ++pruned.sweeps;
      pruned.jobs += static_cast<int>(members.size());
      for (size_t i = 0; i < members.size(); ++i) {
        // The blobs once, with the last member's files.
        RETURN_IF_ERROR(RemoveFiles(members[i], sweep_row.owner(),
                                    i + 1 == members.size() ? unused : std::vector<std::string>{},
                                    &pruned));
      }
    }
    RETURN_IF_ERROR(store_->Compact(kCompactPages));
  }
  return pruned;
}

}  // namespace traind
