#include "server/quota_ledger.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace traind {
namespace {

constexpr bool kLimited = true;
constexpr bool kLocal = false;

// What an owner holds on disk, as MeasureStorage would say.
std::function<StorageUse()> Stored(int64_t uploads, int64_t job_files = 0) {
  return [=] { return StorageUse{uploads, job_files}; };
}

std::unique_ptr<QuotaLedger::Reservation> OpenOrDie(QuotaLedger& ledger, const std::string& owner,
                                                    bool limited = kLimited) {
  absl::StatusOr<std::unique_ptr<QuotaLedger::Reservation>> reservation =
      ledger.Open(owner, limited);
  EXPECT_TRUE(reservation.ok()) << reservation.status();
  return reservation.ok() ? *std::move(reservation) : nullptr;
}

// The issue: nine uploads each under the quota, together over it.
TEST(QuotaLedgerTest, UploadsInFlightCountAgainstTheStorageQuota) {
  QuotaLedger ledger({/*max_storage_bytes=*/1000, /*max_uploads=*/0});
  std::vector<std::unique_ptr<QuotaLedger::Reservation>> admitted;
  std::vector<absl::Status> refused;
  for (int i = 0; i < 9; ++i) {
    auto upload = OpenOrDie(ledger, "alice");
    ASSERT_NE(upload, nullptr);
    absl::Status status = upload->ReserveBytes(300, Stored(0));
    if (status.ok()) {
      admitted.push_back(std::move(upload));
    } else {
      refused.push_back(status);
    }
  }
  EXPECT_EQ(admitted.size(), 3u);
  ASSERT_EQ(refused.size(), 6u);
  for (const absl::Status& status : refused) {
    EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  }
  EXPECT_EQ(refused[0].message(),
            "storage quota: 'alice' holds 0 bytes (uploads 0, job files 0, job events 0) and has "
            "900 more in "
            "flight in 3 uploads besides this one; 300 more would exceed the 1000 bytes of traind "
            "--max-storage-per-token; wait for those uploads to end, or trainctl delete finished "
            "jobs to free space");
  EXPECT_EQ(ledger.InFlightFor("alice").bytes, 900);
  // What is stored counts with what is in flight.
  admitted.pop_back();
  auto next = OpenOrDie(ledger, "alice");
  EXPECT_TRUE(absl::IsResourceExhausted(next->ReserveBytes(300, Stored(200, 200))))
      << "400 stored + 600 in flight";
  EXPECT_TRUE(next->ReserveBytes(300, Stored(100)).ok()) << "100 stored + 600 in flight";
}

TEST(QuotaLedgerTest, ConcurrentReservationsCannotAllPassOnOneMeasurement) {
  QuotaLedger ledger({/*max_storage_bytes=*/1000, /*max_uploads=*/0});
  std::atomic<int> measuring{0};
  std::atomic<int> overlapped{0};
  // Slow, like MeasureStorage on a full disk: every thread measures while the others do.
  const auto slow_measure = [&] {
    if (++measuring > 1) ++overlapped;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    --measuring;
    return StorageUse{};
  };
  std::atomic<int> ok{0}, exhausted{0};
  std::vector<std::unique_ptr<QuotaLedger::Reservation>> held(9);
  std::vector<std::thread> threads;
  for (int i = 0; i < 9; ++i) {
    threads.emplace_back([&, i] {
      held[i] = OpenOrDie(ledger, "alice");
      const absl::Status status = held[i]->ReserveBytes(300, slow_measure);
      if (status.ok()) ++ok;
      if (absl::IsResourceExhausted(status)) ++exhausted;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), 3);
  EXPECT_EQ(exhausted.load(), 6);
  EXPECT_GT(overlapped.load(), 0) << "the measurements did not overlap: the race was not tried";
  EXPECT_EQ(ledger.InFlightFor("alice").bytes, 900);
}

TEST(QuotaLedgerTest, EveryEndOfAnUploadGivesItsShareBack) {
  QuotaLedger ledger({/*max_storage_bytes=*/1000, /*max_uploads=*/2});
  {  // failed, cancelled or abandoned after its header: destroyed without settling
    auto upload = OpenOrDie(ledger, "alice");
    ASSERT_TRUE(upload->ReserveBytes(1000, Stored(0)).ok());
    EXPECT_EQ(ledger.InFlightFor("alice").bytes, 1000);
    EXPECT_EQ(ledger.InFlightFor("alice").uploads, 1);
  }
  EXPECT_EQ(ledger.InFlightFor("alice").uploads, 0);
  EXPECT_EQ(ledger.InFlightFor("alice").bytes, 0);
  {  // refused by the quota: holds its slot, no bytes, until it ends
    auto upload = OpenOrDie(ledger, "alice");
    EXPECT_TRUE(absl::IsResourceExhausted(upload->ReserveBytes(1001, Stored(0))));
    EXPECT_EQ(ledger.InFlightFor("alice").uploads, 1);
    EXPECT_EQ(ledger.InFlightFor("alice").bytes, 0);
  }
  {  // ended before its header (client gone): only a slot
    auto upload = OpenOrDie(ledger, "alice");
  }
  EXPECT_EQ(ledger.InFlightFor("alice").uploads, 0);
  {  // committed: settled bytes leave the ledger (the measurement has them), the slot at the end
    auto upload = OpenOrDie(ledger, "alice");
    ASSERT_TRUE(upload->ReserveBytes(700, Stored(0)).ok());
    upload->Settle();
    EXPECT_EQ(upload->bytes(), 0);
    EXPECT_EQ(ledger.InFlightFor("alice").bytes, 0);
    EXPECT_EQ(ledger.InFlightFor("alice").uploads, 1);
  }
  EXPECT_EQ(ledger.InFlightFor("alice").uploads, 0);
  auto whole = OpenOrDie(ledger, "alice");
  EXPECT_TRUE(whole->ReserveBytes(1000, Stored(0)).ok()) << "nothing left behind";
}

// The measurement runs without the lock; an upload that commits meanwhile may be missing from it.
TEST(QuotaLedgerTest, BytesSettledDuringAMeasurementStillCount) {
  QuotaLedger ledger({/*max_storage_bytes=*/1000, /*max_uploads=*/0});
  auto first = OpenOrDie(ledger, "alice");
  ASSERT_TRUE(first->ReserveBytes(600, Stored(0)).ok());
  auto second = OpenOrDie(ledger, "alice");
  const absl::Status status = second->ReserveBytes(500, [&] {
    first->Settle();      // the first upload commits while the second measures...
    return StorageUse{};  // ...and this measurement was taken before it was stored
  });
  EXPECT_TRUE(absl::IsResourceExhausted(status)) << status;
  EXPECT_TRUE(second->ReserveBytes(400, Stored(600)).ok()) << "measured as stored from now on";
}

TEST(QuotaLedgerTest, ATokenMayHaveOnlySoManyUploadsOpen) {
  QuotaLedger ledger({/*max_storage_bytes=*/0, /*max_uploads=*/2});
  auto first = OpenOrDie(ledger, "alice");
  auto second = OpenOrDie(ledger, "alice");
  absl::StatusOr<std::unique_ptr<QuotaLedger::Reservation>> third = ledger.Open("alice", kLimited);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(third.status().message(),
            "uploads: 'alice' already has 2 uploads in flight; the limit is 2 (traind "
            "--max-uploads-per-token); wait for one to end");
  EXPECT_EQ(ledger.InFlightFor("alice").uploads, 2) << "a refusal takes no slot";
  auto bobs = OpenOrDie(ledger, "bob");
  EXPECT_NE(bobs, nullptr) << "another token's slots are its own";
  first.reset();
  EXPECT_TRUE(ledger.Open("alice", kLimited).ok()) << "a slot given back is free again";
}

TEST(QuotaLedgerTest, LocalCallersAreCountedButNeverRefused) {
  QuotaLedger ledger({/*max_storage_bytes=*/1000, /*max_uploads=*/1});
  bool measured = false;
  const auto measure = [&] {
    measured = true;
    return StorageUse{5000, 0};
  };
  auto first = OpenOrDie(ledger, "local", kLocal);
  auto second = OpenOrDie(ledger, "local", kLocal);
  ASSERT_NE(second, nullptr);
  EXPECT_TRUE(first->ReserveBytes(900, measure).ok());
  EXPECT_TRUE(second->ReserveBytes(900, measure).ok());
  EXPECT_FALSE(measured) << "an unlimited caller's storage is not measured";
  EXPECT_EQ(ledger.InFlightFor("local").uploads, 2);
  EXPECT_EQ(ledger.InFlightFor("local").bytes, 1800);
  auto alice = OpenOrDie(ledger, "alice");
  EXPECT_TRUE(alice->ReserveBytes(1000, Stored(0)).ok()) << "local's uploads are not alice's";
}

TEST(QuotaLedgerTest, ZeroMeansNoLimit) {
  QuotaLedger ledger({/*max_storage_bytes=*/0, /*max_uploads=*/0});
  std::vector<std::unique_ptr<QuotaLedger::Reservation>> open;
  for (int i = 0; i < 100; ++i) {
    open.push_back(OpenOrDie(ledger, "alice"));
    ASSERT_NE(open.back(), nullptr);
    EXPECT_TRUE(open.back()->ReserveBytes(int64_t{1} << 40, nullptr).ok());
  }
}

TEST(QuotaLedgerTest, BadReservationsAreRefused) {
  QuotaLedger ledger({/*max_storage_bytes=*/1000, /*max_uploads=*/0});
  auto upload = OpenOrDie(ledger, "alice");
  EXPECT_EQ(upload->ReserveBytes(-1, Stored(0)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(upload->ReserveBytes(int64_t{1} << 62, Stored(int64_t{1} << 62)).code(),
            absl::StatusCode::kResourceExhausted)
      << "no overflow";
  EXPECT_EQ(upload->ReserveBytes(10, nullptr).code(), absl::StatusCode::kInternal)
      << "a quota needs a measurement";
  ASSERT_TRUE(upload->ReserveBytes(10, Stored(0)).ok());
  EXPECT_EQ(upload->ReserveBytes(10, Stored(0)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ledger.InFlightFor("alice").bytes, 10);
}

}  // namespace
}  // namespace traind
