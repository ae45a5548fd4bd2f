#include "script/output_events.h"

#include <unistd.h>

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace traind {

using trainer::v1::JobEvent;
using trainer::v1::LogLine;

namespace {

constexpr size_t kStderrTailLines = 20;
// The program's whole output is kept in the job's directory up to this much; the store keeps what
// OutputBudget admits.
constexpr int64_t kOutputLogBytes = 64 << 20;
// A stored line of output costs the log budget one for each this many bytes (at least one).
constexpr double kLogLineUnit = 256;

}  // namespace

OutputEvents::OutputEvents(const trainer::v1::JobSpec& spec, int pause_after_epoch,
                           const ProgramMemory* memory, Send send, Log log)
    : stop_at_accuracy_(spec.stop_at_accuracy()),
      pause_after_epoch_(pause_after_epoch),
      memory_(memory),
      send_(std::move(send)),
      log_(std::move(log)) {}

OutputEvents::~OutputEvents() {
  if (output_log_fd_ >= 0) close(output_log_fd_);
}

void OutputEvents::KeepOutputIn(int fd) {
  if (output_log_fd_ >= 0) close(output_log_fd_);
  output_log_fd_ = fd;
}

void OutputEvents::Handle(const ProgramProcess::Output& output, absl::Time now) {
  if (output_log_fd_ >= 0 && output_log_bytes_ < kOutputLogBytes) {
    const size_t room = static_cast<size_t>(kOutputLogBytes - output_log_bytes_);
    const size_t size = std::min(room, output.bytes.size());
    if (write(output_log_fd_, output.bytes.data(), size) > 0) output_log_bytes_ += size;
  }
  (output.stream == ProgramProcess::Stream::kStdout ? stdout_lines_ : stderr_lines_)
      .Append(output.bytes, [&](absl::string_view line) { HandleLine(output.stream, line, now); });
}

void OutputEvents::AfterRead(bool got_output, absl::Time now) {
  if (got_output) {
    last_output_at_ = now;
  } else if (now - last_output_at_ > absl::Seconds(1)) {
    SendHeldSummary();
  }
  for (OutputBudget* budget : {&log_budget_, &step_budget_}) {
    if (std::optional<std::string> note = budget->Note(now)) log_(*note, LogLine::WARNING);
  }
}

void OutputEvents::Finish() {
  const absl::Time end = absl::Now();
  stdout_lines_.Finish(
      [&](absl::string_view line) { HandleLine(ProgramProcess::Stream::kStdout, line, end); });
  stderr_lines_.Finish(
      [&](absl::string_view line) { HandleLine(ProgramProcess::Stream::kStderr, line, end); });
  SendHeldSummary();
  for (OutputBudget* budget : {&log_budget_, &step_budget_}) {
    if (std::optional<std::string> note = budget->Note(absl::Now(), /*force=*/true)) {
      log_(*note, LogLine::WARNING);
    }
  }
  KeepOutputIn(-1);  // closed: the program's output has ended
}

void OutputEvents::HandleLine(ProgramProcess::Stream stream, absl::string_view line,
                              absl::Time now) {
  if (stream == ProgramProcess::Stream::kStderr) {
    if (stderr_tail_.size() < kStderrTailLines) stderr_tail_.emplace_back();
    stderr_tail_[stderr_lines_seen_++ % kStderrTailLines].assign(line.data(), line.size());
  }
  // Bytes count as well as lines: a line of 16 KiB costs as much as 64 short ones, so a program
  // printing long lines fills the store no faster than one printing short ones.
  const double cost = std::max(1.0, static_cast<double>(line.size()) / kLogLineUnit);
  if (log_budget_.Admit(now, cost)) log_(std::string(line), LogLine::INFO);
  const int64_t summaries_before = metrics_.summaries_read();
  const int64_t steps_before = metrics_.steps_read();
  // A step the budget would drop is only counted: making its event would be wasted work.
  const bool room_for_step = step_budget_.HasRoom(now);
  std::vector<JobEvent> events = metrics_.Read(
      line, room_for_step ? MetricLines::Steps::kMake : MetricLines::Steps::kCountOnly);
  // An epoch's summary is sent a line later (MetricLines holds it for its time lines): its time
  // is when its own line came.
  // The clock is read again for the moments an epoch's time is made of (rare): a program that
  // prints a whole epoch in one read of output still gets its epoch a time above zero, which
  // reports need (a sweep's samples a second and its CPU-vs-GPU speed-up come from it).
  if (metrics_.summaries_read() != summaries_before) summary_line_at_ = absl::Now();
  // The summary a step line flushes (the next epoch's first step ends the last epoch) is timed
  // before that step starts its own epoch's time.
  for (JobEvent& event : events) {
    if (event.has_step()) {
      memory_->Fill(event.mutable_step());
      TimeStep(event.mutable_step(), now);
    }
    if (event.has_epoch_summary()) {
      TimeEpoch(event.mutable_epoch_summary());
      ObserveEpoch(event.epoch_summary());
    }
    send_(std::move(event));
  }
  if (metrics_.steps_read() != steps_before) {
    if (metrics_.epoch() != timed_epoch_) {  // the epoch's first step line: its time starts
      timed_epoch_ = metrics_.epoch();
      epoch_started_ = absl::Now();
    }
    step_budget_.Admit(now);  // stored if made (there was room), counted as dropped if not
  }
}

std::vector<std::string> OutputEvents::StderrTail() const {
  // stderr_tail_ is full once it wraps; the oldest line is then the next one to be overwritten.
  std::vector<std::string> tail;
  const size_t oldest =
      stderr_lines_seen_ > kStderrTailLines ? stderr_lines_seen_ % kStderrTailLines : 0;
  for (size_t i = 0; i < stderr_tail_.size(); ++i) {
    tail.push_back(stderr_tail_[(oldest + i) % stderr_tail_.size()]);
  }
  return tail;
}

void OutputEvents::SendHeldSummary() {
  for (JobEvent& event : metrics_.Finish()) {
    if (event.has_epoch_summary()) {
      TimeEpoch(event.mutable_epoch_summary());
      ObserveEpoch(event.epoch_summary());
    }
    send_(std::move(event));
  }
}

void OutputEvents::TimeStep(trainer::v1::StepMetrics* step, absl::Time now) {
  const int64_t steps = metrics_.steps_read();
  if (last_step_made_steps_ > 0 && steps > last_step_made_steps_ && now > last_step_made_at_) {
    const double seconds =
        absl::ToDoubleSeconds(now - last_step_made_at_) / (steps - last_step_made_steps_);
    step->set_step_seconds(seconds);
    if (metrics_.batch_size() > 0) step->set_samples_per_second(metrics_.batch_size() / seconds);
  }
  last_step_made_at_ = now;
  last_step_made_steps_ = steps;
}

void OutputEvents::TimeEpoch(trainer::v1::EpochSummary* epoch) {
  // Where the program prints no epoch time (most do not), the time from the epoch's first step
  // line to its summary line, or from the last summary (or the start) for an epoch that printed
  // no step: what the report's time per epoch and speedups are computed from.
  if (epoch->epoch_seconds_no_eval() <= 0) {
    const absl::Time from = timed_epoch_ == epoch->epoch() ? epoch_started_ : last_summary_;
    epoch->set_epoch_seconds_no_eval(std::max(0.0, absl::ToDoubleSeconds(summary_line_at_ - from)));
  }
  last_summary_ = summary_line_at_;
  timed_epoch_ = 0;
}

void OutputEvents::ObserveEpoch(const trainer::v1::EpochSummary& epoch) {
  if (stop_at_accuracy_ > 0 && epoch.evaluated() &&
      epoch.validation_accuracy() >= stop_at_accuracy_ && stopped_reason_.empty()) {
    stopped_reason_ = absl::StrFormat("reached validation accuracy %.4f >= %g",
                                      epoch.validation_accuracy(), stop_at_accuracy_);
    stopped_epoch_ = epoch.epoch();
    log_(absl::StrCat("Stopping the program after epoch ", epoch.epoch(), ": ", stopped_reason_),
         LogLine::INFO);
  }
  if (pause_after_epoch_ > 0 && epoch.epoch() >= pause_after_epoch_ && stopped_reason_.empty()) {
    // A program that pauses itself (the traind package, after its checkpoint) has marked it by
    // now and exits on its own; one that does not is stopped here, and cannot resume.
    stopped_reason_ = absl::StrCat(
        "stopped at its rung after epoch ", epoch.epoch(),
        ": the program cannot pause there (it saved no checkpoint through the traind package "
        "before reporting the epoch), so it goes no further");
    stopped_epoch_ = epoch.epoch();
  }
}

}  // namespace traind
