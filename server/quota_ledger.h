// QuotaLedger: what each owner has in flight on the daemon — the uploads it has open and the bytes
// their headers announced — so that the per-token limits hold for work in progress, not only for
// work done. Without it nine concurrent uploads, each under the storage quota, were all admitted
// (each was checked against what was stored, and nothing was stored yet), and one token could
// hold hundreds of uploads open.
//
// An upload asks the ledger twice, and holds what it gets in one Reservation (RAII):
//   1. Open(owner) when the call starts: one of the owner's `max_uploads` slots, or
//      RESOURCE_EXHAUSTED. Short critical section, no I/O: fit for a reaction.
//   2. Reservation::ReserveBytes(size) when the header arrives, before any byte is stored: what
//      the owner holds (measured: blobs + job files) + what its other uploads in flight reserved
//      + `size` must fit `max_storage_bytes`, or RESOURCE_EXHAUSTED. The check and the
//      reservation are one step under the lock, so concurrent uploads cannot all pass on the
//      same measurement. Blocks (the measurement): call on the executor.
// Then Settle() once the blob is committed (its bytes are stored, and measured from then on),
// and destroying the Reservation gives back the slot and whatever was not settled: a failed,
// cancelled or abandoned upload releases everything, however it ends.
//
// The measurement runs without the lock. An upload that settles meanwhile may or may not be in it,
// so bytes settled during a measurement are counted as still in flight: the ledger may
// over-count for that moment (a refusal near the limit that a retry would pass), never
// under-count what uploads store. Announced sizes bound that: BlobStore::Upload refuses bytes
// beyond them. (Job files that running jobs write, checkpoints and artifacts, are measured once
// written, not reserved ahead.)
//
// Unlimited owners (local callers on the Unix socket) are counted too, never refused, and their
// stored bytes are not measured. The ledger does not own the measurement: StorageUse comes from
// storage_quota.h. Thread-safe; a Reservation is used by one caller at a time (the upload) and
// must not outlive its ledger.
#ifndef TRAIND_SERVER_QUOTA_LEDGER_H_
#define TRAIND_SERVER_QUOTA_LEDGER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/storage_quota.h"

namespace traind {

class QuotaLedger {
 public:
  struct Limits {
    // Bytes one limited owner may hold: stored plus reserved by its uploads in flight. 0: none.
    // traind --max-storage-per-token.
    int64_t max_storage_bytes = 0;
    // Uploads one limited owner may have open at once. 0: none. traind --max-uploads-per-token.
    int max_uploads = 0;
  };

  class Reservation;

  explicit QuotaLedger(Limits limits) : limits_(limits) {}
  QuotaLedger(const QuotaLedger&) = delete;
  QuotaLedger& operator=(const QuotaLedger&) = delete;

  // Opens an upload for `owner`: takes one of its slots. RESOURCE_EXHAUSTED (with the limit and
  // how many are open) when a `limited` owner already has `max_uploads` open. No I/O.
  absl::StatusOr<std::unique_ptr<Reservation>> Open(const std::string& owner, bool limited);

  // What `owner` has in flight now (for tests and reports).
  struct InFlight {
    int uploads = 0;
    int64_t bytes = 0;
  };
  InFlight InFlightFor(const std::string& owner) const;

  const Limits& limits() const { return limits_; }

 private:
  struct Account {
    int uploads = 0;      // open reservations
    int64_t bytes = 0;    // reserved by them, not yet settled
    int64_t settled = 0;  // bytes ever settled while the account existed (only differences count)
  };
  // From ~Reservation: gives back one slot and `bytes` not settled.
  void Close(const std::string& owner, int64_t bytes);

  const Limits limits_;
  mutable absl::Mutex mu_;
  // Owners with an open upload; an account goes when its last upload closes.
  absl::flat_hash_map<std::string, Account> accounts_ ABSL_GUARDED_BY(mu_);
};

// One upload's share of its owner's account: its slot, and (after ReserveBytes) its announced
// bytes. Destroying it gives back whatever it still holds.
class QuotaLedger::Reservation {
 public:
  ~Reservation();
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;

  // Reserves `bytes` against the owner's storage quota (see the file comment).
  // `measure_stored` is what the owner holds now; it may block, runs without the ledger's lock,
  // and is called only for a limited owner when there is a quota. INVALID_ARGUMENT for bytes < 0;
  // FAILED_PRECONDITION when called twice; RESOURCE_EXHAUSTED, naming the quota, what is stored
  // and what is in flight, when `bytes` more would pass the quota (nothing is reserved then).
  absl::Status ReserveBytes(int64_t bytes, const std::function<StorageUse()>& measure_stored);

  // The upload was committed: its bytes are stored now, so they stop counting as in flight. The
  // slot is held until the Reservation is destroyed.
  void Settle();

  const std::string& owner() const { return owner_; }
  int64_t bytes() const { return bytes_; }  // reserved and not settled

 private:
  friend class QuotaLedger;
  Reservation(QuotaLedger* ledger, std::string owner, bool limited)
      : ledger_(ledger), owner_(std::move(owner)), limited_(limited) {}

  QuotaLedger* const ledger_;
  const std::string owner_;
  const bool limited_;
  bool reserved_ = false;
  int64_t bytes_ = 0;
};

}  // namespace traind

#endif  // TRAIND_SERVER_QUOTA_LEDGER_H_
