// When this process became ready for its job and how long it then waited for one. A warm worker
// (worker/main.cc) loads LibTorch and, where traind asks, prepares a GPU before it reads its
// request: a job placed on it before that is done waits for it, outside the job's own start-up
// phases. The worker notes both figures as it reads its request (its age from
// common/proc_file.h's ProcessAgeSeconds), and the job's "Start-up:" line says them
// (engine/training_job.cc), so a packed search's trials show whether they waited.
#ifndef TRAIND_ENGINE_WORKER_READINESS_H_
#define TRAIND_ENGINE_WORKER_READINESS_H_

#include <optional>

namespace traind {

struct WorkerReadiness {
  double ready_after_seconds = 0;  // from the process's start (its libraries' loading included)
  double idle_seconds = 0;         // from then until its request was read (about 0: it waited)
  // Jobs it ran before this one (WorkerRequest.serve_another); ready_after_seconds is then 0: it
  // was ready when the last one ended, and idle_seconds counts from there.
  int jobs_served_before = 0;
};

// Set by the worker's main as it reads each request; unset in any other process (a test's,
// traind's).
void NoteWorkerReadiness(const WorkerReadiness& readiness);
std::optional<WorkerReadiness> NotedWorkerReadiness();

}  // namespace traind

#endif  // TRAIND_ENGINE_WORKER_READINESS_H_
