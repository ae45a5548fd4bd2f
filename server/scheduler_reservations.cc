// Scheduler's reservations: this host's devices held for a job on several hosts that another
// traind coordinates (server/peer_service.h), and a job of this host's that waits for its hosts.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/job_spec.h"
#include "common/log_priority.h"
#include "common/random_secret.h"
#include "common/status_macros.h"
#include "server/scheduler.h"

namespace traind {

using trainer::v1::Job;

absl::Status Scheduler::WaitForHosts(const Job& job, const std::string& why, bool afresh) {
  const absl::Time now = absl::Now();
  absl::Duration waited;
  absl::Duration retry_in;
  {
    absl::MutexLock lock(&mu_);
    if (afresh) host_waits_.erase(job.id());
    auto it = host_waits_.try_emplace(job.id(), HostWait{now, now, absl::ZeroDuration()}).first;
    waited = now - it->second.since;
    // 2 s, then doubling to 30 s: a host back from a restart is found quickly, a host that
    // stays away is not asked every second for ten minutes.
    it->second.delay = std::clamp(it->second.delay * 2, absl::Seconds(2), absl::Seconds(30));
    retry_in = it->second.delay;
    if (waited < options_.host_wait) it->second.retry_at = now + retry_in;
  }
  if (waited >= options_.host_wait) {
    {
      absl::MutexLock lock(&mu_);
      host_waits_.erase(job.id());
    }
    return Transition(job.id(), Job::FAILED,
                      absl::StrCat(why, " (gave up after waiting ",
                                   absl::FormatDuration(absl::Trunc(waited, absl::Seconds(1))),
                                   " for the hosts)"));
  }
  return Transition(job.id(), Job::QUEUED,
                    absl::StrCat(why, "; trying again in ",
                                 absl::FormatDuration(absl::Trunc(retry_in, absl::Seconds(1))),
                                 ", from the last checkpoint (gives up ",
                                 absl::FormatDuration(options_.host_wait - waited), " from now)"));
}

absl::StatusOr<Scheduler::PeerReservation> Scheduler::ReserveForPeer(
    const trainer::v1::JobSpec& spec, const std::string& what, absl::Duration lease) {
  Job job;
  *job.mutable_spec() = spec;
  absl::MutexLock lock(&mu_);
  if (shutting_down_) return absl::UnavailableError("this traind is shutting down");
  if (paused_) return absl::ResourceExhaustedError("this traind's queue is paused");
  RETURN_IF_ERROR(plan_.Feasible(job));
  ExpireReservations();
  const std::vector<HeldDevices> holding = Holding();
  std::optional<std::vector<std::string>> devices = plan_.Place(job, holding, {});
  if (!devices) {
    return absl::ResourceExhaustedError(
        absl::StrCat("busy: no free ", spec.device(), " for ", RanksPerHost(spec), " rank(s) (",
                     holding.size() - reservations_.size(), " job(s) running, ",
                     reservations_.size(), " reservation(s) for other hosts)"));
  }
  PeerReservation reservation{RandomSecret().substr(0, 16), *devices};
  reservations_[reservation.id] = Reserved{*std::move(devices), absl::Now() + lease, false, what};
  LogAt(LogPriority::kInfo) << "traind: holding " << absl::StrJoin(reservation.devices, ", ")
                            << " for " << what << "\n";
  return reservation;
}

absl::StatusOr<std::vector<std::string>> Scheduler::ClaimReservation(const std::string& id) {
  absl::MutexLock lock(&mu_);
  ExpireReservations();
  auto it = reservations_.find(id);
  if (it == reservations_.end() || it->second.claimed) {
    return absl::NotFoundError("reservation_id: no such reservation (its lease ran out?)");
  }
  it->second.claimed = true;
  return it->second.devices;
}

void Scheduler::RenewReservation(const std::string& id, absl::Duration lease) {
  absl::MutexLock lock(&mu_);
  auto it = reservations_.find(id);
  if (it != reservations_.end() && !it->second.claimed) it->second.expires = absl::Now() + lease;
}

void Scheduler::ReleaseReservation(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = reservations_.find(id);
  if (it == reservations_.end()) return;
  LogAt(LogPriority::kInfo) << "traind: released " << absl::StrJoin(it->second.devices, ", ")
                            << " held for " << it->second.what << "\n";
  reservations_.erase(it);
  wake_ = true;
}

void Scheduler::ExpireReservations() {
  const absl::Time now = absl::Now();
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    if (!it->second.claimed && it->second.expires < now) {
      LogAt(LogPriority::kInfo) << "traind: released " << absl::StrJoin(it->second.devices, ", ")
                                << " held for " << it->second.what
                                << ": not claimed within its lease\n";
      it = reservations_.erase(it);
      wake_ = true;
    } else {
      ++it;
    }
  }
}

}  // namespace traind
