// A fixed pool of threads that runs closures in FIFO order. gRPC reactions hand blocking work
// (SQLite, process control) to it, so no reaction ever blocks. Thread-safe.
#ifndef TRAIND_SERVER_EXECUTOR_H_
#define TRAIND_SERVER_EXECUTOR_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace traind {

class Executor {
 public:
  explicit Executor(int threads);
  // Runs what was scheduled, then joins.
  ~Executor();

  void Schedule(std::function<void()> task);

 private:
  void Loop();

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace traind

#endif  // TRAIND_SERVER_EXECUTOR_H_
