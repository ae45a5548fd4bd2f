// FairMutex: a mutex that serves waiters in the order they arrived (a ticket lock).
//
// absl::Mutex lets the thread that just unlocked take the lock straight back, which is what a
// long job cut into short holds does (the store inserting a 10,000-member sweep a chunk per
// transaction): a waiting GetJob then saw the lock free for a moment between chunks but lost
// the race to the next chunk again and again, and waited 0.7 s behind "short" holds. With
// tickets, whoever waits is next once the current hold ends, so a hold of a few milliseconds
// delays others by a few milliseconds. Annotated for clang's -Wthread-safety like absl::Mutex.
#ifndef TRAIND_COMMON_FAIR_MUTEX_H_
#define TRAIND_COMMON_FAIR_MUTEX_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace traind {

class ABSL_LOCKABLE FairMutex {
 public:
  FairMutex() = default;
  FairMutex(const FairMutex&) = delete;
  FairMutex& operator=(const FairMutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    std::unique_lock<std::mutex> guard(state_);
    const uint64_t ticket = next_ticket_++;
    turn_.wait(guard, [&] { return now_serving_ == ticket; });
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    {
      std::lock_guard<std::mutex> guard(state_);
      ++now_serving_;
    }
    turn_.notify_all();  // the next ticket's owner is among them; waiters are few
  }
  // For code the analysis cannot follow (a lambda run under the lock); checks nothing.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}
  // Threads waiting for the lock (tests).
  int Waiting() {
    std::lock_guard<std::mutex> guard(state_);
    return static_cast<int>(next_ticket_ - now_serving_) - 1;
  }

 private:
  std::mutex state_;
  std::condition_variable turn_;
  uint64_t next_ticket_ = 0;
  uint64_t now_serving_ = 0;
};

class ABSL_SCOPED_LOCKABLE FairMutexLock {
 public:
  explicit FairMutexLock(FairMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~FairMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  FairMutexLock(const FairMutexLock&) = delete;
  FairMutexLock& operator=(const FairMutexLock&) = delete;

 private:
  FairMutex* const mu_;
};

}  // namespace traind

#endif  // TRAIND_COMMON_FAIR_MUTEX_H_
