// ScriptRun: one start of a script job (JobSpec.script) inside traind-script. It makes the working
// directory, starts the program on the device traind chose (script_environment.h), reads its
// output as it comes (each line a log line within OutputBudget, every line also read by
// MetricLines for the step and epoch events built-in jobs send), stops it when traind asks
// (SIGTERM to its group, then SIGKILL) or when it reached stop_at_accuracy, and tells traind how
// it ended as a worker does (supervise/worker_exit.h): the result, or an error with the
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
#include "common/output_budget.h"
#include "script/gpu_process_memory.h"
#include "script/metric_lines.h"
#include "script/output_lines.h"
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
  // The working, checkpoint, output and temp directories; the program's command line.
  absl::StatusOr<ProgramProcess::Options> Prepare();
  // The operator's limit (WorkerRequest.program_limits) as it can be set, with a warning in the
  // job's log where traind's own hard limit is lower.
  int64_t Attainable(int resource, int64_t requested, const char* flag);
  // Reads the program's output until it ended and its pipes closed (or drain_after_exit passed),
  // stopping it on request on the way. The events the output makes go to traind after each read,
  // or every kBusyEventsEvery while it floods.
  void Pump(ProgramProcess& program);
  // A piece of output: its lines, all taken to have come at `now` for the output budgets (the
  // clock is read once per read of output, not per line: a flood brings thousands of lines a
  // read); an epoch's start and end read it again.
  void HandleOutput(const ProgramProcess::Output& output, absl::Time now);
  void HandleLine(ProgramProcess::Stream stream, absl::string_view line, absl::Time now);
  // The last kStderrTailLines of stderr, oldest first.
  std::vector<std::string> StderrTail() const;
  void ObserveEpoch(const trainer::v1::EpochSummary& epoch);
  // The epoch summary MetricLines holds for its time lines, if any: at the end, or in a pause.
  void SendHeldSummary();
  // Fills an epoch's time where the program printed none.
  void TimeEpoch(trainer::v1::EpochSummary* epoch);
  // Once a second: the program's resident memory, and a CUDA job's GPU memory (NVML).
  void SampleMemory(pid_t pid, absl::Time now);
  // Memory the program did not report itself (traind.report does), as sampled.
  void FillMemory(trainer::v1::StepMetrics* step) const;
  // A step's time from its line's arrival: the time since the last step made, over the step
  // lines read since (counted ones included); samples/s where the program gave its batch size.
  // The first step has none (its window would hold the program's start-up).
  void TimeStep(trainer::v1::StepMetrics* step, absl::Time now);
  // The files the program left in TRAIND_OUTPUT_DIR, sent as the job's artifacts (rank 0).
  void KeepOutputs();
  // Ends the run as a worker ends: the result, or an error; the exit status.
  int Finish(const ProgramProcess::Exit& exit);
  int Fail(const std::string& why);
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

  OutputLines stdout_lines_;
  OutputLines stderr_lines_;
  MetricLines metrics_;
  // Lines of up to 256 bytes; a longer one costs one for each 256 (script_run.cc kLogLineUnit):
  // at most 12.8 KB a second of output reaches the store, however long its lines.
  OutputBudget log_budget_{"lines of output", 2000, 50};
  OutputBudget step_budget_{"step metrics", 200, 10};
  // The last lines of stderr, for a failure's message: a ring whose strings keep their
  // buffers (a program logging to stderr at 100,000 lines a second costs no allocation a line).
  std::vector<std::string> stderr_tail_;
  size_t stderr_lines_seen_ = 0;
  std::string limits_;      // the program's limits in words (DescribeLimits), for its failure
  int output_log_fd_ = -1;  // the whole output, up to kOutputLogBytes
  int64_t output_log_bytes_ = 0;

  int timed_epoch_ = 0;  // the epoch whose first step line set epoch_started_
  absl::Time epoch_started_;
  absl::Time last_summary_ = started_;
  absl::Time summary_line_at_ = started_;  // when the last epoch summary's line came
  absl::Time last_output_at_ = started_;
  absl::Time last_step_made_at_;      // when the last step event was made (TimeStep)
  int64_t last_step_made_steps_ = 0;  // MetricLines::steps_read() then
  bool resumed_ = false;              // the working directory was there: an earlier start made it
  bool stop_sent_ = false;
  // Pump's events wait in events_'s buffer until it sends them (kBusyEventsEvery under a flood).
  bool hold_events_ = false;
  absl::Time kill_at_ = absl::InfiniteFuture();
  std::string stopped_reason_;  // stop_at_accuracy reached
  int stopped_epoch_ = 0;
  int64_t current_rss_ = 0;
  int64_t peak_rss_ = 0;
  // A CUDA job's GPU memory as the driver holds it for the program's processes (NVML); null for
  // other devices or where NVML is missing.
  std::unique_ptr<GpuProcessMemory> gpu_memory_;
  int64_t current_driver_ = 0;
  int64_t peak_driver_ = 0;
  absl::Time next_memory_sample_ = absl::InfinitePast();
};

}  // namespace traind

#endif  // TRAIND_SCRIPT_SCRIPT_RUN_H_
