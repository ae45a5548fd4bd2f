// traind-worker: runs one job in its own process, so a crash, an abort or an out-of-memory kill
// takes down only that job. Protocol (worker.proto): one length-delimited WorkerRequest on stdin;
// length-delimited JobEvents on stdout; human-readable diagnostics on stderr. A request with
// serve_another keeps it for the next one if its job ends well (JobEvent.worker_idle between).
// traind may start a worker before it has a job for it (LibTorch's start-up is then paid while
// idle): it waits on stdin, and ends quietly if stdin closes without a request. Started with
// --fork-server it forks such workers from itself for traind (supervise/fork_server.h).
// Exit codes: 0 done (a FinalResult was sent), 1 the job failed (an ERROR LogLine says why),
// 2 bad request, 3 cancelled or stopped. SIGTERM asks for a clean stop between batches (a
// cancel); SIGUSR1 for a checkpoint first, then the stop (traind shutting down or gone).
// Two requests are not jobs: list_devices answers with one ListDevicesResponse (the devices jobs
// may ask for) and exits; inspect_model loads that TorchScript file and answers with one LogLine
// (INFO: its description; ERROR: why it cannot be trained).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>

#include "absl/synchronization/mutex.h"
#include "common/proc_file.h"
#include "engine/device.h"
#include "engine/device_rehearsal.h"
#include "engine/job_globals.h"
#include "engine/training_job.h"
#include "engine/training_loop.h"
#include "engine/worker_readiness.h"
#include "models/script_prints.h"
#include "models/scripted_model.h"
#include "supervise/event_pipe.h"
#include "supervise/fork_server.h"
#include "supervise/worker_exit.h"
#include "supervise/worker_side.h"
#include "trainer/v1/worker.pb.h"
#include "worker/heap_retention.h"
#include "worker/priority.h"

namespace {

// Trains `request`'s job, its events (and what its TorchScript model prints) on `pipe`.
absl::Status RunJob(const trainer::v1::WorkerRequest& request, traind::EventPipeWriter& pipe,
                    traind::StopFlags& signals) {
  // One writer at a time: the job's events and what its TorchScript model prints (from any of
  // its shard threads) share the pipe.
  absl::Mutex pipe_mu;
  const auto emit = [&pipe, &pipe_mu, &signals](const trainer::v1::JobEvent& event) {
    absl::MutexLock lock(&pipe_mu);
    // The daemon is gone (its end of the pipe closed): stop rather than train for nobody.
    if (!pipe.Write(event)) signals.stop.store(true);
  };
  traind::SendScriptPrintsTo([&emit](const std::string& line, bool is_note) {
    trainer::v1::JobEvent event;
    event.mutable_log()->set_severity(is_note ? trainer::v1::LogLine::WARNING
                                              : trainer::v1::LogLine::INFO);
    event.mutable_log()->set_text(line);
    emit(event);
  });
  const absl::Status status = traind::RunTrainingJob(
      request, [&emit](trainer::v1::JobEvent event) { emit(event); }, signals.stop,
      &signals.suspend);
  traind::FlushScriptPrintNote();
  traind::SendScriptPrintsTo({});  // `emit` ends with this call
  return status;
}

// A job that ended well: its result is written (each event is one write(2), nothing is
// buffered). Asked to serve another (and not told to stop meanwhile), the worker puts back what
// the job changed for the whole process, says it is idle and returns to read the next request;
// one that cannot put it all back ends as a one-job worker does.
// Otherwise the events end here, not when the process does: the daemon marks a job SUCCEEDED at
// the end of its events, and the kernel takes 0.1-0.2 s to tear down a CUDA process (its address
// space first, its files after). Skip the teardown a one-job process does not need (the device
// context, the allocator's caches, LibTorch's static destructors).
void EndWell(const trainer::v1::WorkerRequest& request, const traind::JobGlobals& fresh,
             int jobs_served, traind::EventPipeWriter& pipe, const traind::StopFlags& signals) {
  if (request.serve_another() && !signals.stop.load()) {
    traind::RestoreJobGlobals(fresh);
    if (traind::CaptureJobGlobals() == fresh) {
      trainer::v1::JobEvent idle;
      idle.mutable_worker_idle()->set_jobs_served(jobs_served);
      if (pipe.Write(idle)) return;
    } else {
      std::fprintf(stderr,
                   "traind-worker: cannot put back what job %lld set for the process; serving "
                   "no other job\n",
                   static_cast<long long>(request.job_id()));
    }
  }
  pipe.Close();
  _exit(traind::kWorkerSucceeded);
}

// Answers a request that is not a job (list_devices, inspect_model); nullopt for a job.
std::optional<int> AnswerQuery(const trainer::v1::WorkerRequest& request,
                               traind::EventPipeWriter& pipe) {
  if (request.list_devices()) {
    return pipe.Write(traind::DiscoverDevices()) ? traind::kWorkerSucceeded
                                                 : traind::kWorkerJobFailed;
  }
  if (request.inspect_model().empty()) return std::nullopt;
  trainer::v1::JobEvent answer;
  absl::StatusOr<std::string> description = traind::InspectModelFile(request.inspect_model());
  answer.mutable_log()->set_severity(description.ok() ? trainer::v1::LogLine::INFO
                                                      : trainer::v1::LogLine::ERROR);
  answer.mutable_log()->set_text(description.ok() ? *description
                                                  : std::string(description.status().message()));
  return pipe.Write(answer) && description.ok() ? traind::kWorkerSucceeded
                                                : traind::kWorkerJobFailed;
}

// The exit code for a job that did not end well, its error sent when it failed.
int EndBadly(const trainer::v1::WorkerRequest& request, const absl::Status& status,
             traind::EventPipeWriter& pipe) {
  if (absl::IsCancelled(status)) return traind::kWorkerStopped;
  if (traind::IsPausedAtRung(status)) return traind::kWorkerPaused;
  trainer::v1::JobEvent error;
  error.mutable_log()->set_severity(trainer::v1::LogLine::ERROR);
  error.mutable_log()->set_text(std::string(status.ToString()));
  pipe.Write(error);
  std::fprintf(stderr, "traind-worker: job %lld failed: %s\n",
               static_cast<long long>(request.job_id()), status.ToString().c_str());
  return traind::kWorkerJobFailed;
}

// Reads requests and runs them: one, or one after another while each asks to serve another.
// Returns the process's exit code.
int ServeRequests(traind::EventPipeWriter& pipe, traind::StopFlags& signals) {
  const traind::JobGlobals fresh = traind::CaptureJobGlobals();
  const std::optional<double> started_ready_after = traind::ProcessAgeSeconds();
  for (int served = 0;; ++served) {
    const auto ready = std::chrono::steady_clock::now();
    trainer::v1::WorkerRequest request;
    switch (traind::ReadWorkerRequest(&request)) {
      case traind::RequestRead::kRead:
        if (started_ready_after.has_value()) {
          traind::NoteWorkerReadiness(
              {served == 0 ? *started_ready_after : 0,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - ready).count(),
               served});
        }
        break;
      case traind::RequestRead::kClosed:  // a waiting worker that traind no longer needs
        return traind::kWorkerStopped;
      case traind::RequestRead::kUnreadable:
        std::fprintf(stderr, "traind-worker: could not read a WorkerRequest on stdin\n");
        return traind::kWorkerBadRequest;
    }
    if (std::optional<int> answered = AnswerQuery(request, pipe)) return *answered;
    const absl::Status status = RunJob(request, pipe, signals);
    if (!status.ok()) return EndBadly(request, status, pipe);
    EndWell(request, fresh, served + 1, pipe, signals);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool fork_server = argc == 2 && std::strcmp(argv[1], traind::kForkServerFlag) == 0;
  if (argc != 1 && !fork_server) {
    std::fprintf(stderr,
                 "usage: traind-worker [%s]  (started by traind: a WorkerRequest on stdin, "
                 "proto/trainer/v1/worker.proto)\n",
                 traind::kForkServerFlag);
    return traind::kWorkerBadRequest;
  }
  // Returns in each worker it forks (supervise/fork_server.h), which goes on from here.
  if (fork_server) traind::ServeForks(STDIN_FILENO, argv);
  // First: the threads started later inherit it (worker/priority.h).
  if (absl::Status lowered = traind::LowerPriorityFromEnvironment(); !lowered.ok()) {
    std::fprintf(stderr, "traind-worker: %s\n", std::string(lowered.message()).c_str());
  }
  const int events_fd = traind::TakeStdoutForEvents();
  traind::EventPipeWriter pipe(events_fd);

  // If traind dies (even kill -9), checkpoint and stop: a new traind re-queues the job and it
  // resumes from there.
  if (!traind::StopWithParent(SIGUSR1)) return traind::kWorkerStopped;  // it died already
  traind::StopFlags& signals = traind::InstallStopSignals();

  traind::RetainFreedHeapMemory();

  // A warm worker on a machine with a GPU (traind sets TRAIND_PREPARE_DEVICE): create the GPU's
  // context and library handles, and load the kernels a training step uses
  // (engine/device_rehearsal.h; TRAIND_REHEARSE=0 leaves them to the job, to measure the
  // difference), while no job waits for them.
  if (const char* prepare = std::getenv("TRAIND_PREPARE_DEVICE"); prepare != nullptr && *prepare) {
    try {
      traind::PrepareDevice(torch::Device(prepare));
      const char* rehearse = std::getenv("TRAIND_REHEARSE");
      if (rehearse == nullptr || std::strcmp(rehearse, "0") != 0) {
        traind::RehearseTrainingStep(torch::Device(prepare));
      }
    } catch (const std::exception& e) {  // the job will meet it again, and say so
      std::fprintf(stderr, "traind-worker: cannot prepare %s: %s\n", prepare, e.what());
    }
  }

  return ServeRequests(pipe, signals);
}
