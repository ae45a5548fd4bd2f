// ShardThreads: a few threads that each train one shard of a batch at the same time as the
// caller trains the first. On a machine that gives a CPU job only a few cores, OpenMP's intra-op
// threads pay poorly on small operators (they meet at the end of every one: LeNet5 on the 2-vCPU
// machine was slower on two threads than on one), while shards of one batch, one thread each,
// meet once a step (docs/benchmarks-history.md). TrainStep (engine/train_step.h) says what a shard
// does. Not c10::ThreadPool or at::launch: their threads sleep on a condition variable between
// tasks. A first version of this pool that slept between rounds trained a LeNet5 epoch on the
// 2-vCPU machine in 3.11-3.57 s, this one (spinning first) in 2.78-2.83 s
// (docs/benchmarks-history.md). Each pool thread runs its shards on one intra-op thread, under the
// calling thread's LibTorch thread-local state (grad mode, the profiler's callbacks, dispatch
// keys), as at::launch does. Owned by the job's training loop; Run is called from one thread at a
// time (the job's).
#ifndef TRAIND_ENGINE_SHARD_THREADS_H_
#define TRAIND_ENGINE_SHARD_THREADS_H_

#include <ATen/ThreadLocalState.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace traind {

class ShardThreads {
 public:
  // Starts `shards` - 1 threads (none for 1). Each sets LibTorch's intra-op threads to 1, which
  // under OpenMP also sets the process's count: the job has chosen 1 already.
  explicit ShardThreads(int shards);
  ~ShardThreads();  // stops and joins them
  ShardThreads(const ShardThreads&) = delete;
  ShardThreads& operator=(const ShardThreads&) = delete;

  int shards() const { return static_cast<int>(threads_.size()) + 1; }

  // Runs work(0) on the calling thread and work(1) ... work(shards - 1) on the pool's threads, all
  // at once, and returns when every one has. An exception any of them threw is rethrown here, the
  // lowest shard's first, after all have finished.
  void Run(const std::function<void(int shard)>& work) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop(int shard) ABSL_LOCKS_EXCLUDED(mu_);

  // Waits up to kSpin for `done()` without sleeping, then sleeps on mu_ until it holds. A step's
  // serial part between two rounds is well under a millisecond: a thread that went to sleep
  // there would take tens of microseconds to wake, each step.
  void WaitFor(const std::function<bool()>& done) ABSL_LOCKS_EXCLUDED(mu_);
  void StopAndJoin() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  const std::function<void(int)>* work_ ABSL_GUARDED_BY(mu_) = nullptr;
  const at::ThreadLocalState* caller_state_ ABSL_GUARDED_BY(mu_) = nullptr;  // Run's
  // Written under mu_ (so a sleeping waiter wakes), read without it while spinning.
  std::atomic<uint64_t> round_{0};  // Run calls so far: a thread works once a round
  std::atomic<int> running_{0};     // pool threads still working on this round
  std::atomic<bool> stopping_{false};
  std::vector<std::exception_ptr> errors_ ABSL_GUARDED_BY(mu_);  // by shard, this round's
  std::vector<std::thread> threads_;                             // constant after construction
};

}  // namespace traind

#endif  // TRAIND_ENGINE_SHARD_THREADS_H_
