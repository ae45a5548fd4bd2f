#include "common/log_format.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "common/terminal_text.h"

namespace traind {

using trainer::v1::JobEvent;

std::string FormatStepLine(const trainer::v1::StepMetrics& step) {
  return absl::StrFormat("Epoch: %03d/%03d | Batch %04d/%04d | Loss: %.4f", step.epoch(),
                         step.epochs(), step.batch(), step.batches_per_epoch(), step.loss());
}

std::vector<std::string> FormatEpochLines(const trainer::v1::EpochSummary& s) {
  if (!s.evaluated()) {
    return {
        absl::StrFormat("Time / epoch without evaluation: %.2f min",
                        s.epoch_seconds_no_eval() / 60),
        absl::StrFormat("Time elapsed: %.2f min", s.elapsed_seconds() / 60),
    };
  }
  return {
      absl::StrFormat("Time / epoch without evaluation: %.2f min", s.epoch_seconds_no_eval() / 60),
      absl::StrFormat("Epoch: %03d/%03d | Train: %.2f%% | Validation: %.2f%% | "
                      "Best Validation (Ep. %03d): %.2f%%",
                      s.epoch(), s.epochs(), s.train_accuracy() * 100,
                      s.validation_accuracy() * 100, s.best_epoch(),
                      s.best_validation_accuracy() * 100),
      absl::StrFormat("Time elapsed: %.2f min", s.elapsed_seconds() / 60),
  };
}

std::vector<std::string> FormatFinalLines(const trainer::v1::FinalResult& r) {
  return {
      absl::StrFormat("Total Training Time: %.2f min", r.total_training_seconds() / 60),
      absl::StrFormat("Test accuracy %.2f%%", r.test_accuracy() * 100),
      absl::StrFormat("Total Time: %.2f min", r.total_seconds() / 60),
  };
}

std::vector<std::string> FormatEventLines(const JobEvent& event) {
  switch (event.kind_case()) {
    case JobEvent::kStep:
      return {FormatStepLine(event.step())};
    case JobEvent::kEpochSummary:
      return FormatEpochLines(event.epoch_summary());
    case JobEvent::kFinalResult:
      return FormatFinalLines(event.final_result());
    case JobEvent::kLog:  // a job's own words: its lines kept, anything else escaped
      return {TerminalSafe(event.log().text(), /*keep_newlines=*/true)};
    default:
      return {};
  }
}

std::string FormatBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return absl::StrFormat("%.2f GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return absl::StrFormat("%.1f MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return absl::StrFormat("%.1f KiB", b / 1024.0);
  return absl::StrFormat("%d B", bytes);
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return absl::StrFormat("%ds", s);
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

std::string StateName(trainer::v1::Job::State state) { return trainer::v1::Job::State_Name(state); }

}  // namespace traind
