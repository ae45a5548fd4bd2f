// WorkerForker: traind's end of a fork server (supervise/fork_server.h), one traind-worker that
// has loaded LibTorch and forks the waiting workers from itself. Start returns at once; the
// server loads meanwhile, and until Poll() says it is ready workers start as programs do.
// Start it from a thread that outlives every worker it forks: their parent-death signal follows
// the thread that started the server (the scheduler's loop). Fork may be called from any thread.
#ifndef TRAIND_SUPERVISE_WORKER_FORKER_H_
#define TRAIND_SUPERVISE_WORKER_FORKER_H_

#include <sys/types.h>

#include <array>
#include <atomic>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace traind {

class WorkerForker {
 public:
  // Starts `program --fork-server` with traind's environment. Linux only (UNIMPLEMENTED
  // elsewhere).
  static absl::StatusOr<std::unique_ptr<WorkerForker>> Start(const std::string& program);
  // Closes the socket (the server exits) and reaps the server. The workers it forked are this
  // process's children and live on.
  ~WorkerForker();
  WorkerForker(const WorkerForker&) = delete;
  WorkerForker& operator=(const WorkerForker&) = delete;

  enum class State { kLoading, kReady, kFailed };
  // Whether the server is still loading, has loaded and waits, or has failed for good (it exited,
  // hung for 30 s, or refused a fork for a reason other than a passing shortage of memory or
  // processes); never blocks.
  State Poll() ABSL_LOCKS_EXCLUDED(mu_);
  // A child of this process, forked from the server, with `envp` (null-terminated, complete) as
  // its environment and `fds` as its stdin, stdout and stderr (this process keeps its copies).
  // Blocks until the server has loaded (30 s at most). An error: this request could not be
  // forked (start the program instead); Poll() then says whether the server can still fork.
  absl::StatusOr<pid_t> Fork(char* const* envp, const std::array<int, 3>& fds)
      ABSL_LOCKS_EXCLUDED(mu_);
  pid_t pid() const { return pid_; }

 private:
  WorkerForker(pid_t pid, int socket) : pid_(pid), socket_(socket) {}
  // Reads the server's "ready" once (blocking, or not); false if it is not ready.
  bool AwaitReady(bool block) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const pid_t pid_;
  const int socket_;
  absl::Mutex mu_;                             // one request and its answer at a time
  std::atomic<State> state_{State::kLoading};  // changed under mu_, read without it by Poll
};

}  // namespace traind

#endif  // TRAIND_SUPERVISE_WORKER_FORKER_H_
