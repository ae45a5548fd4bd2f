// ScriptRun: one start of a script job (JobSpec.script) inside traind-script. It prepares and
// starts the program on the device traind chose (program_launch.h), pumps its output into
// OutputEvents (the events it makes) while ProgramMemory samples its memory, stops it when traind
// asks (SIGTERM to its group, then SIGKILL) or when it reached stop_at_accuracy, and tells traind
// how it ended as a worker does (supervise/worker_exit.h): the result, or an error with the
// program's exit code or signal and the last lines of its stderr.
// Not thread-safe: traind-script's one thread drives it.
#ifndef TRAIND_SCRIPT_SCRIPT_RUN_H_
#define TRAIND_SCRIPT_SCRIPT_RUN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "script/output_events.h"
#include "script/program_memory.h"
#include "script/program_process.h"
#include "supervise/event_pipe.h"
#include "supervise/worker_side.h"
#include "trainer/v1/worker.pb.h"

namespace traind {

class ScriptRun {
 public:
  struct Options {
    // SIGTERM to SIGKILL of the program's group; shorter than traind's own grace for the runner
    // (Scheduler::Options::cancel_grace), so the runner outlives its program and reports.
    absl::Duration stop_grace = absl::Seconds(5);
    // How long output is still read after the program ended (children it left hold the pipes
    // until they are killed; one that left its group on purpose may hold them forever).
    absl::Duration drain_after_exit = absl::Seconds(2);
    // Which rank of the job this is (RANK, set by traind for a job of several). Rank 0 speaks for
    // the job, as built-in jobs' rank 0 does; the others send only their errors (their output
    // is kept in output-rank<N>.log).
    int rank = 0;
    // traind's workers run below it (TRAIND_WORKER_NICE): the program at `program_nice`, and this
    // runner, which only reads, below the program (`runner_nice`), so that parsing a flood of
    // output takes no CPU from the training it reports on.
    int program_nice = 0;
    int runner_nice = 0;
  };
  ScriptRun(const trainer::v1::WorkerRequest& request, EventPipeWriter* events,
            const StopFlags& stop, Options options);
  ScriptRun(const trainer::v1::WorkerRequest& request, EventPipeWriter* events,
            const StopFlags& stop)
      : ScriptRun(request, events, stop, Options()) {}

  // Runs the program to its end; returns the runner's exit status (supervise/worker_exit.h).
  int Run();

 private:
  // Reads the program's output until it ended and its pipes closed (or drain_after_exit passed),
  // stopping it on request on the way. The events the output makes go to traind after each read,
  // or every kBusyEventsEvery while it floods.
  void Pump(ProgramProcess& program);
  // The files the program left in TRAIND_OUTPUT_DIR, sent as the job's artifacts (rank 0).
  void KeepOutputs();
  // Ends the run as a worker ends: the result, or an error; the exit status.
  int Finish(const ProgramProcess::Exit& exit);
  int Fail(const std::string& why);
  // A search's trial that paused itself at its rung (the traind package's kScriptPausedMark in
  // its checkpoints): the epoch, and the mark removed; 0 when there is none.
  int TakePausedMark();
  void Send(trainer::v1::JobEvent event);
  void Log(const std::string& text,
           trainer::v1::LogLine::Severity severity = trainer::v1::LogLine::INFO);
  // Paths of the daemon's machine are its own business: a message about the job's directory
  // names it so.
  std::string Private(const std::string& text) const;

  const trainer::v1::WorkerRequest& request_;
  EventPipeWriter* const events_;
  const StopFlags& stop_;
  const Options options_;
  const absl::Time started_ = absl::Now();

  ProgramMemory memory_;
  OutputEvents output_;     // after memory_, which it reads
  std::string limits_;      // the program's limits in words, for its failure
  bool stop_sent_ = false;  // SIGTERM sent to its group; SIGKILL at kill_at_
  absl::Time kill_at_ = absl::InfiniteFuture();
  // Pump's events wait in events_'s buffer until it sends them (kBusyEventsEvery under a flood).
  bool hold_events_ = false;
};

}  // namespace traind

#endif  // TRAIND_SCRIPT_SCRIPT_RUN_H_
