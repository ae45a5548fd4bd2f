// Scheduler: runs queued jobs one at a time, oldest first, each in its own traind-worker process.
// It records every state change and every worker event through the store (which assigns seq)
// and tells the hub. Cancellation: a queued job ends at once; a running one gets SIGTERM, then
// SIGKILL after `cancel_grace`. Thread-safe; owns one thread between Start and Shutdown.
#ifndef TRAIND_SERVER_SCHEDULER_H_
#define TRAIND_SERVER_SCHEDULER_H_

#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/event_hub.h"
#include "server/store.h"
#include "server/worker_process.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class Scheduler {
 public:
  struct Options {
    std::string worker_path;                         // traind-worker
    std::string jobs_dir;                            // each job gets <jobs_dir>/<id>/
    absl::Duration cancel_grace = absl::Seconds(10);  // SIGTERM -> SIGKILL
  };
  Scheduler(Store* store, EventHub* hub, Options options);
  ~Scheduler();  // calls Shutdown

  // Marks jobs left RUNNING by a previous daemon as QUEUED again, then starts the loop.
  absl::Status Start();
  // A job was queued: look again.
  void Wake();
  // The job as it is after the request (CANCELLED at once for a queued job; still RUNNING, with
  // the worker told to stop, for a running one). FAILED_PRECONDITION when already finished.
  absl::StatusOr<trainer::v1::Job> Cancel(int64_t job_id);
  // Stops starting jobs; a running job's worker is stopped and the job re-queued, to run again
  // when the daemon next starts.
  void Shutdown();

  // Appends an event through the store and publishes it. Used by the service too.
  absl::StatusOr<trainer::v1::JobEvent> Record(
      int64_t job_id, trainer::v1::JobEvent event,
      std::optional<trainer::v1::Job::State> expected_state = std::nullopt);

 private:
  void Loop();
  void RunJob(const trainer::v1::Job& job);
  absl::Status Transition(int64_t job_id, trainer::v1::Job::State state, const std::string& reason,
                          std::optional<trainer::v1::Job::State> expected = std::nullopt);

  Store* const store_;
  EventHub* const hub_;
  const Options options_;
  std::thread thread_;

  absl::Mutex mu_;
  bool wake_ ABSL_GUARDED_BY(mu_) = true;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  int64_t running_job_ ABSL_GUARDED_BY(mu_) = 0;
  WorkerProcess* running_worker_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancel_requested_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time kill_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
};

}  // namespace traind

#endif  // TRAIND_SERVER_SCHEDULER_H_
