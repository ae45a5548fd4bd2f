// OutputEvents: a program's output, as it comes, made into the job's events: each line a log line
// within OutputBudget, every line also read by MetricLines for the step and epoch events built-in
// jobs send (timed where the program prints no time, with the memory ProgramMemory sampled); the
// whole output kept in the job's output log; the last lines of stderr kept for a failure's
// message; and the spec's stop_at_accuracy watched. It decides nothing about the process.
// Not thread-safe: traind-script's one thread drives it.
#ifndef TRAIND_SCRIPT_OUTPUT_EVENTS_H_
#define TRAIND_SCRIPT_OUTPUT_EVENTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/output_budget.h"
#include "script/metric_lines.h"
#include "script/output_lines.h"
#include "script/program_memory.h"
#include "script/program_process.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class OutputEvents {
 public:
  using Send = std::function<void(trainer::v1::JobEvent)>;
  using Log = std::function<void(const std::string&, trainer::v1::LogLine::Severity)>;
  // `memory` outlives this; `send` takes each event, `log` each line this says itself.
  // `pause_after_epoch`: a search's trial's rung (WorkerRequest.pause_after_epoch; 0: none).
  OutputEvents(const trainer::v1::JobSpec& spec, int pause_after_epoch, const ProgramMemory* memory,
               Send send, Log log);
  ~OutputEvents();  // closes the output log
  OutputEvents(const OutputEvents&) = delete;
  OutputEvents& operator=(const OutputEvents&) = delete;

  // Where the whole output is kept (up to kOutputLogBytes); taken over. -1: nowhere.
  void KeepOutputIn(int fd);
  // A piece of output: its lines, all taken to have come at `now` for the output budgets (the
  // clock is read once per read of output, not per line: a flood brings thousands of lines a
  // read); an epoch's start and end read it again.
  void Handle(const ProgramProcess::Output& output, absl::Time now);
  // After each read of output (`got_output`: any came): an epoch's summary waits for the line
  // after it (its time), so one the program went quiet after (evaluating, waiting) is sent after
  // a quiet second; the budgets say what they dropped.
  void AfterRead(bool got_output, absl::Time now);
  // The output has ended: its last unfinished lines, the summary held, the budgets' last word.
  void Finish();

  // The last lines of stderr, oldest first.
  std::vector<std::string> StderrTail() const;
  // Set once an epoch reached stop_at_accuracy: "reached validation accuracy 0.9100 >= 0.9", or
  // a search's trial reported its rung's epoch (a program that pauses itself there, through the
  // traind package, is paused instead: ScriptRun reads its mark).
  const std::string& stopped_reason() const { return stopped_reason_; }
  int stopped_epoch() const { return stopped_epoch_; }
  // The result the metric lines make (what the program printed of it).
  trainer::v1::FinalResult result() const { return metrics_.result(); }

 private:
  void HandleLine(ProgramProcess::Stream stream, absl::string_view line, absl::Time now);
  // The epoch summary MetricLines holds for its time lines, if any.
  void SendHeldSummary();
  // Fills an epoch's time where the program printed none.
  void TimeEpoch(trainer::v1::EpochSummary* epoch);
  // Notes an epoch that reached stop_at_accuracy, or the rung.
  void ObserveEpoch(const trainer::v1::EpochSummary& epoch);
  // A step's time from its line's arrival: the time since the last step made, over the step
  // lines read since (counted ones included); samples/s where the program gave its batch size.
  // The first step has none (its window would hold the program's start-up).
  void TimeStep(trainer::v1::StepMetrics* step, absl::Time now);

  const double stop_at_accuracy_;
  const int pause_after_epoch_;
  const ProgramMemory* const memory_;
  const Send send_;
  const Log log_;
  const absl::Time started_ = absl::Now();

  OutputLines stdout_lines_;
  OutputLines stderr_lines_;
  MetricLines metrics_;
  // Lines of up to 256 bytes; a longer one costs one for each 256 (kLogLineUnit): at most 12.8 KB
  // a second of output reaches the store, however long its lines.
  OutputBudget log_budget_{"lines of output", 2000, 50};
  OutputBudget step_budget_{"step metrics", 200, 10};
  // The last lines of stderr: a ring whose strings keep their buffers (a program logging to
  // stderr at 100,000 lines a second costs no allocation a line).
  std::vector<std::string> stderr_tail_;
  size_t stderr_lines_seen_ = 0;
  int output_log_fd_ = -1;
  int64_t output_log_bytes_ = 0;

  int timed_epoch_ = 0;  // the epoch whose first step line set epoch_started_
  absl::Time epoch_started_;
  absl::Time last_summary_ = started_;
  absl::Time summary_line_at_ = started_;  // when the last epoch summary's line came
  absl::Time last_output_at_ = started_;
  absl::Time last_step_made_at_;      // when the last step event was made (TimeStep)
  int64_t last_step_made_steps_ = 0;  // MetricLines::steps_read() then
  std::string stopped_reason_;
  int stopped_epoch_ = 0;
};

}  // namespace traind

#endif  // TRAIND_SCRIPT_OUTPUT_EVENTS_H_
