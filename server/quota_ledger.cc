#include "server/quota_ledger.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace traind {

namespace {

std::string Uploads(int n) { return absl::StrCat(n, n == 1 ? " upload" : " uploads"); }

}  // namespace

absl::StatusOr<std::unique_ptr<QuotaLedger::Reservation>> QuotaLedger::Open(
    const std::string& owner, bool limited) {
  absl::MutexLock lock(&mu_);
  Account& account = accounts_[owner];
  if (limited && limits_.max_uploads > 0 && account.uploads >= limits_.max_uploads) {
    // account.uploads > 0 here: the account was there before and stays.
    return absl::ResourceExhaustedError(
        absl::StrCat("uploads: '", owner, "' already has ", Uploads(account.uploads),
                     " in flight; the limit is ", limits_.max_uploads,
                     " (traind --max-uploads-per-token); wait for one to end"));
  }
  ++account.uploads;
  return std::unique_ptr<Reservation>(new Reservation(this, owner, limited));
}

QuotaLedger::InFlight QuotaLedger::InFlightFor(const std::string& owner) const {
  absl::MutexLock lock(&mu_);
  const auto it = accounts_.find(owner);
  if (it == accounts_.end()) return InFlight{};
  return InFlight{it->second.uploads, it->second.bytes};
}

void QuotaLedger::Close(const std::string& owner, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  const auto it = accounts_.find(owner);
  if (it == accounts_.end()) return;  // cannot happen: the closing reservation holds a slot
  it->second.bytes -= bytes;
  if (--it->second.uploads == 0) accounts_.erase(it);
}

QuotaLedger::Reservation::~Reservation() { ledger_->Close(owner_, bytes_); }

absl::Status QuotaLedger::Reservation::ReserveBytes(
    int64_t bytes, const std::function<StorageUse()>& measure_stored) {
  if (bytes < 0) return absl::InvalidArgumentError("header.size_bytes: must be 0 or more");
  if (reserved_) return absl::FailedPreconditionError("upload: its size is already reserved");
  const int64_t quota = ledger_->limits_.max_storage_bytes;
  const bool checked = limited_ && quota > 0;
  StorageUse stored;
  int64_t settled_before = 0;
  if (checked) {
    if (!measure_stored) {
      return absl::InternalError("storage quota: traind cannot measure what this token holds");
    }
    {
      absl::MutexLock lock(&ledger_->mu_);
      settled_before = ledger_->accounts_[owner_].settled;
    }
    stored = measure_stored();  // disk and store: not under the lock
  }
  absl::MutexLock lock(&ledger_->mu_);
  QuotaLedger::Account& account = ledger_->accounts_[owner_];  // there: this holds a slot
  if (checked) {
    // What settled while we measured may be missing from `stored`: count it as in flight.
    const int64_t in_flight = account.bytes + (account.settled - settled_before);
    const int64_t held = stored.total() + in_flight;
    if (bytes > quota - held) {  // held + bytes > quota, without overflow for any announced size
      return absl::ResourceExhaustedError(absl::StrCat(
          "storage quota: '", owner_, "' holds ", stored.total(), " bytes (uploads ",
          stored.uploads, ", job files ", stored.job_files, ", job events ", stored.events,
          ") and has ", in_flight, " more in flight in ", Uploads(account.uploads - 1),
          " besides this one; ", bytes, " more would exceed the ", quota,
          " bytes of traind --max-storage-per-token; wait for those uploads to end, or "
          "trainctl delete finished jobs to free space"));
    }
  }
  account.bytes += bytes;
  bytes_ = bytes;
  reserved_ = true;
  return absl::OkStatus();
}

void QuotaLedger::Reservation::Settle() {
  absl::MutexLock lock(&ledger_->mu_);
  QuotaLedger::Account& account = ledger_->accounts_[owner_];
  account.bytes -= bytes_;
  account.settled += bytes_;
  bytes_ = 0;
}

}  // namespace traind
