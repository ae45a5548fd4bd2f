// MetricRows: a job's metric events as table rows, one format for `trainctl export` and the HTTP
// API's export, so a CSV from either is the same file.
//   job, seq, time, kind, epoch, batch, loss, accuracy, validation_loss, validation_accuracy,
//   learning_rate, samples_per_second, step_seconds, current_bytes, driver_bytes, metrics
// kind: step (loss of the logged batches; memory now), epoch (training loss and accuracy, and the
// validation split's when evaluated), final (test loss and accuracy; peak memory), evaluation
// (an evaluate-only job's test loss and accuracy), bench (samples/s and seconds per step).
// metrics: a program's own (StepMetrics.metrics, EpochSummary.metrics) by name, "grad_norm=1.25;
// train/ece=0.04" in CSV (names hold no , ; or =) and an object in JSON. Other events (state
// changes, logs, artifacts) are not metrics and give no row. A value that an event does not carry
// is an empty CSV cell and an absent JSON key.
#ifndef TRAIND_COMMON_METRIC_ROWS_H_
#define TRAIND_COMMON_METRIC_ROWS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

enum class RowFormat { kCsv, kJsonLines };

// "csv" or "jsonl"; INVALID_ARGUMENT naming `field` and the allowed values otherwise.
absl::StatusOr<RowFormat> ParseRowFormat(const std::string& field, const std::string& name);

// The CSV header line (with "\n"); empty for JSON lines, which name every value.
std::string MetricRowsHeader(RowFormat format);

// Appends `event`'s row (with "\n") to `out` and returns true, or returns false for an event that
// is not a metric.
bool AppendMetricRow(int64_t job_id, const trainer::v1::JobEvent& event, RowFormat format,
                     std::string* out);

}  // namespace traind

#endif  // TRAIND_COMMON_METRIC_ROWS_H_
