#include "common/event_values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace traind {

namespace {

bool IsFraction(double value) { return std::isfinite(value) && value >= 0 && value <= 1; }
bool IsDuration(double value) { return std::isfinite(value) && value >= 0; }

// The metrics map within its bounds: the first kMaxEventMetrics names in name order that are
// short enough; others go.
int BoundMetrics(google::protobuf::Map<std::string, double>* metrics) {
  std::vector<std::string> names;
  for (const auto& [name, value] : *metrics) names.push_back(name);
  std::sort(names.begin(), names.end());
  int dropped = 0;
  size_t kept = 0;
  for (const std::string& name : names) {
    if (name.empty() || name.size() > kMaxEventMetricName || kept == kMaxEventMetrics) {
      metrics->erase(name);
      ++dropped;
    } else {
      ++kept;
    }
  }
  return dropped;
}

int CleanStep(trainer::v1::StepMetrics* step) {
  int dropped = 0;
  if (step->has_samples_per_second() && !IsDuration(step->samples_per_second())) {
    step->clear_samples_per_second();
    ++dropped;
  }
  if (step->has_step_seconds() && !IsDuration(step->step_seconds())) {
    step->clear_step_seconds();
    ++dropped;
  }
  if (step->has_current_allocated_bytes() && step->current_allocated_bytes() < 0) {
    step->clear_current_allocated_bytes();
    ++dropped;
  }
  if (step->has_driver_allocated_bytes() && step->driver_allocated_bytes() < 0) {
    step->clear_driver_allocated_bytes();
    ++dropped;
  }
  return dropped + BoundMetrics(step->mutable_metrics());
}

int CleanEpoch(trainer::v1::EpochSummary* epoch) {
  int dropped = 0;
  if (epoch->has_train_accuracy() && !IsFraction(epoch->train_accuracy())) {
    epoch->clear_train_accuracy();
    ++dropped;
  }
  if (epoch->has_validation_accuracy() && !IsFraction(epoch->validation_accuracy())) {
    epoch->clear_validation_accuracy();
    ++dropped;
  }
  if (!IsFraction(epoch->best_validation_accuracy())) {
    epoch->clear_best_validation_accuracy();
    epoch->clear_best_epoch();
    ++dropped;
  }
  for (auto [get, clear] : {std::pair{&trainer::v1::EpochSummary::epoch_seconds_no_eval,
                                      &trainer::v1::EpochSummary::clear_epoch_seconds_no_eval},
                            std::pair{&trainer::v1::EpochSummary::eval_seconds,
                                      &trainer::v1::EpochSummary::clear_eval_seconds},
                            std::pair{&trainer::v1::EpochSummary::elapsed_seconds,
                                      &trainer::v1::EpochSummary::clear_elapsed_seconds}}) {
    if (!IsDuration((epoch->*get)())) {
      (epoch->*clear)();
      ++dropped;
    }
  }
  return dropped + BoundMetrics(epoch->mutable_metrics());
}

int CleanResult(trainer::v1::FinalResult* result) {
  int dropped = 0;
  if (result->has_test_accuracy() && !IsFraction(result->test_accuracy())) {
    result->clear_test_accuracy();
    ++dropped;
  }
  if (!IsDuration(result->total_seconds())) {
    result->clear_total_seconds();
    ++dropped;
  }
  if (!IsDuration(result->total_training_seconds())) {
    result->clear_total_training_seconds();
    ++dropped;
  }
  return dropped;
}

std::string FormatMiB(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace

bool BoundEventSize(trainer::v1::JobEvent* event) {
  bool changed = false;
  if (event->has_evaluation()) {
    trainer::v1::Evaluation* evaluation = event->mutable_evaluation();
    const int64_t classes = evaluation->classes();
    if (evaluation->confusion_size() > 0 && (classes > static_cast<int64_t>(kMaxConfusionClasses) ||
                                             evaluation->confusion_size() != classes * classes)) {
      evaluation->clear_confusion();
      changed = true;
    }
  }
  const size_t bytes = event->ByteSizeLong();
  if (bytes <= kMaxEventBytes) return changed;
  const google::protobuf::FieldDescriptor* kind = event->GetReflection()->GetOneofFieldDescriptor(
      *event, event->GetDescriptor()->FindOneofByName("kind"));
  trainer::v1::JobEvent warning;
  *warning.mutable_time() = event->time();
  warning.mutable_log()->set_severity(trainer::v1::LogLine::WARNING);
  warning.mutable_log()->set_text(
      std::string("an event (") + (kind != nullptr ? kind->name() : "unknown") + ") of " +
      FormatMiB(bytes) + " was not stored: larger than " + FormatMiB(kMaxEventBytes));
  *event = std::move(warning);
  return true;
}

int DropImpossibleValues(trainer::v1::JobEvent* event) {
  if (event->has_step()) return CleanStep(event->mutable_step());
  if (event->has_epoch_summary()) return CleanEpoch(event->mutable_epoch_summary());
  if (event->has_final_result()) return CleanResult(event->mutable_final_result());
  return 0;
}

}  // namespace traind
