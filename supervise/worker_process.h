// WorkerProcess: one traind-worker child running one job (or, asked to, one job after another:
// WorkerRequest.serve_another). Starts it in its own process group (so a
// Ctrl-C meant for traind does not reach it), sends the WorkerRequest on its stdin, decodes
// JobEvents from its stdout and keeps the last lines of its stderr for error reports.
// A worker may be spawned before its job is known (Spawn, later Send): LibTorch's start-up, about
// a second of CPU, is then paid while the daemon is idle rather than by the job.
// Owned and driven by one thread (the scheduler's); Terminate/Kill may be called from any thread.
#ifndef TRAIND_SUPERVISE_WORKER_PROCESS_H_
#define TRAIND_SUPERVISE_WORKER_PROCESS_H_

#include <sys/types.h>

#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "supervise/delimited_reader.h"
#include "trainer/v1/trainer.pb.h"
#include "trainer/v1/worker.pb.h"

namespace traind {

class WorkerForker;

class WorkerProcess {
 public:
  // Spawn + Send.
  static absl::StatusOr<std::unique_ptr<WorkerProcess>> Start(
      const std::string& worker_path, const trainer::v1::WorkerRequest& request,
      const std::vector<std::string>& environment = {});
  // `started` (Spawn's or Fork's) with `request` sent; an error if it did not start, or died
  // before it could read the request (then it is reaped, and the error says how it ended).
  static absl::StatusOr<std::unique_ptr<WorkerProcess>> WithRequest(
      absl::StatusOr<std::unique_ptr<WorkerProcess>> started,
      const trainer::v1::WorkerRequest& request);
  // A worker waiting for its request, with traind's environment plus `environment` ("NAME=value",
  // e.g. a rank's RANK and WORLD_SIZE). PR_SET_PDEATHSIG in the worker follows the *thread* that
  // spawns it: spawn from a thread that outlives the worker.
  static absl::StatusOr<std::unique_ptr<WorkerProcess>> Spawn(
      const std::string& worker_path, const std::vector<std::string>& environment = {});
  // Spawn's worker, forked by `forker` from a process that has loaded LibTorch (ready in
  // milliseconds, not a program's second) rather than started as a program. Its parent-death
  // signal follows the thread that started `forker`, whichever thread calls this. An error: the
  // forker failed (Spawn instead).
  static absl::StatusOr<std::unique_ptr<WorkerProcess>> Fork(
      WorkerForker& forker, const std::vector<std::string>& environment = {});
  // Hands the spawned worker its job: once, or again each time it is idle (a request with
  // serve_another). An error: it died while waiting (use another), or it is not waiting.
  absl::Status Send(const trainer::v1::WorkerRequest& request);
  // Its job, sent with serve_another, ended well and it waits for another request: its events
  // ended (ReadEvent returned kEnd) with JobEvent.worker_idle. Wait() then reaps nothing.
  bool idle() const { return phase_ == Phase::kIdle; }
  // Jobs it ended well and then stayed for (as its last worker_idle said); 0 until one did.
  int jobs_served() const { return jobs_served_; }
  // Whether Terminate, Suspend or Kill was sent to it since it was started: a worker told to
  // stop may stop its next job too, so it serves none.
  bool signalled() const ABSL_LOCKS_EXCLUDED(reap_mu_);
  // Whether it was forked (Fork) rather than started as a program: its parent-death signal then
  // follows the thread that started the forker, whichever thread forked it.
  bool forked() const { return forked_; }
  // Whether the process has ended (without reaping it).
  bool HasExited() const;
  // Kills and reaps the child if it is still running.
  ~WorkerProcess();

  enum class ReadResult { kEvent, kTimeout, kEnd };
  // Waits up to `timeout` (zero: only what has arrived) for the next event. kEnd: the worker closed
  // its stdout (exited) or sent bytes that do not decode (then its process is killed).
  // A worker_idle event ends the events of a worker that was asked to serve another (idle()
  // after); from one that was not, it is garbage.
  ReadResult ReadEvent(trainer::v1::JobEvent* event, absl::Duration timeout);
  // The same for a request answered with another message (WorkerRequest.list_devices).
  ReadResult Read(google::protobuf::Message* message, absl::Duration timeout);

  // Any thread may signal while another waits in Wait(): a signal is sent only while the child is
  // unreaped (its pid cannot have been reused), and never once Wait() has reaped it.
  void Terminate();  // SIGTERM: stop (a cancel)
  void Suspend();    // SIGUSR1: checkpoint, then stop (shutdown)
  void Kill();       // SIGKILL

  struct Exit {
    int exit_code = -1;  // when it exited
    int signal = 0;      // when a signal ended it
    std::string stderr_tail;
    std::string Describe() const;  // "exit code 1" / "killed by signal 9 (Killed)" + stderr tail
    // Ended by itself with kWorkerSucceeded: anything else takes a job's other ranks down.
    bool clean() const;
    // As a launcher reports it for a rank that ran elsewhere (peers.proto, slurm.proto), and back.
    trainer::v1::ProcessExit ToProto() const;
    static Exit FromProto(const trainer::v1::ProcessExit& proto);
  };
  // Reaps the child (blocking). Call after ReadEvent returned kEnd. An idle worker is not reaped:
  // its job's Exit reads as a clean one.
  Exit Wait();

  pid_t pid() const { return pid_; }

 private:
  WorkerProcess(pid_t pid, int request_fd, int events_fd, int stderr_fd);
  void DrainStderr(int fd);
  Exit Reap();  // Wait, for a worker that is not idle
  std::string StderrTail() ABSL_LOCKS_EXCLUDED(mu_);
  void Signal(int signal);
  bool Reaped() const;

  const pid_t pid_;
  int request_fd_;               // -1 once the request was sent, unless it was to serve another
  bool serves_another_ = false;  // the request sent last set serve_another
  // Send may hand it a job when it is kStarted or kIdle.
  enum class Phase { kStarted, kBusy, kIdle };
  Phase phase_ = Phase::kStarted;
  int jobs_served_ = 0;
  bool forked_ = false;
  const int events_fd_;
  DelimitedReader reader_;
  // The supervising thread reaps while the scheduler's may signal (cancel, shutdown): the reap and
  // every kill() hold reap_mu_, so no signal can reach a process that reused the pid.
  mutable absl::Mutex reap_mu_;
  bool reaped_ ABSL_GUARDED_BY(reap_mu_) = false;
  bool signalled_ ABSL_GUARDED_BY(reap_mu_) = false;
  std::thread stderr_thread_;

  absl::Mutex mu_;
  std::deque<std::string> stderr_lines_ ABSL_GUARDED_BY(mu_);
};

}  // namespace traind

#endif  // TRAIND_SUPERVISE_WORKER_PROCESS_H_
