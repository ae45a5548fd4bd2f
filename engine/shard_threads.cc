#include "engine/shard_threads.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>

namespace traind {

namespace {
constexpr std::chrono::microseconds kSpin(1000);
}  // namespace

ShardThreads::ShardThreads(int shards) : errors_(std::max(1, shards)) {
  try {
    for (int shard = 1; shard < shards; ++shard) {
      threads_.emplace_back([this, shard] { Loop(shard); });
    }
  } catch (...) {  // a thread that could not start: those that did must not outlive this
    StopAndJoin();
    throw;
  }
}

ShardThreads::~ShardThreads() { StopAndJoin(); }

void ShardThreads::StopAndJoin() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

void ShardThreads::WaitFor(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&done));
      return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

void ShardThreads::Run(const std::function<void(int shard)>& work) {
  const at::ThreadLocalState caller_state;
  {
    absl::MutexLock lock(&mu_);
    work_ = &work;
    caller_state_ = &caller_state;
    for (std::exception_ptr& error : errors_) error = nullptr;
    running_ = static_cast<int>(threads_.size());
    ++round_;
  }
  std::exception_ptr first;
  try {
    work(0);
  } catch (...) {
    first = std::current_exception();
  }
  WaitFor([this] { return running_.load() == 0; });
  absl::MutexLock lock(&mu_);
  work_ = nullptr;
  caller_state_ = nullptr;
  if (first == nullptr) {
    for (const std::exception_ptr& error : errors_) {
      if (error != nullptr) {
        first = error;
        break;
      }
    }
  }
  if (first != nullptr) std::rethrow_exception(first);
}

void ShardThreads::Loop(int shard) {
  // This thread's operators on one intra-op thread (ShardThreads' constructor says more).
  at::set_num_threads(1);
  uint64_t done = 0;
  while (true) {
    WaitFor([this, done] { return stopping_.load() || round_.load() != done; });
    const std::function<void(int)>* work = nullptr;
    const at::ThreadLocalState* caller_state = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      done = round_;
      work = work_;
      caller_state = caller_state_;
    }
    std::exception_ptr error;
    try {
      at::ThreadLocalStateGuard state(*caller_state);
      (*work)(shard);
    } catch (...) {
      error = std::current_exception();
    }
    absl::MutexLock lock(&mu_);
    errors_[shard] = error;
    --running_;
  }
}

}  // namespace traind
