#include "common/metric_rows.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"

namespace traind {
namespace {

using trainer::v1::JobEvent;

// One row before formatting: the columns in header order, each set or not.
struct Row {
  std::string kind;
  std::optional<int64_t> epoch, batch;
  std::optional<double> loss, accuracy, validation_loss, validation_accuracy, learning_rate,
      samples_per_second, step_seconds;
  std::optional<int64_t> current_bytes, driver_bytes;
  std::vector<std::pair<std::string, double>> metrics;  // a program's own, by name
};

std::vector<std::pair<std::string, double>> Sorted(
    const google::protobuf::Map<std::string, double>& metrics) {
  std::vector<std::pair<std::string, double>> sorted(metrics.begin(), metrics.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

constexpr const char* kColumns[] = {"job",
                                    "seq",
                                    "time",
                                    "kind",
                                    "epoch",
                                    "batch",
                                    "loss",
                                    "accuracy",
                                    "validation_loss",
                                    "validation_accuracy",
                                    "learning_rate",
                                    "samples_per_second",
                                    "step_seconds",
                                    "current_bytes",
                                    "driver_bytes",
                                    "metrics"};

std::optional<Row> ToRow(const JobEvent& event) {
  Row row;
  switch (event.kind_case()) {
    case JobEvent::kStep: {
      const auto& step = event.step();
      row.kind = "step";
      row.epoch = step.epoch();
      row.batch = step.batch();
      row.loss = step.loss();
      // What a program's job did not report stays an empty cell (StepMetrics' optional fields).
      if (step.has_learning_rate()) row.learning_rate = step.learning_rate();
      if (step.has_samples_per_second()) row.samples_per_second = step.samples_per_second();
      if (step.has_step_seconds()) row.step_seconds = step.step_seconds();
      if (step.has_current_allocated_bytes()) row.current_bytes = step.current_allocated_bytes();
      if (step.has_driver_allocated_bytes()) row.driver_bytes = step.driver_allocated_bytes();
      row.metrics = Sorted(step.metrics());
      return row;
    }
    case JobEvent::kEpochSummary: {
      const auto& epoch = event.epoch_summary();
      row.kind = "epoch";
      row.epoch = epoch.epoch();
      if (epoch.has_train_loss()) row.loss = epoch.train_loss();
      if (epoch.has_train_accuracy()) row.accuracy = epoch.train_accuracy();
      if (epoch.evaluated() && epoch.has_validation_loss()) {
        row.validation_loss = epoch.validation_loss();
      }
      if (epoch.evaluated() && epoch.has_validation_accuracy()) {
        row.validation_accuracy = epoch.validation_accuracy();
      }
      if (epoch.has_learning_rate()) row.learning_rate = epoch.learning_rate();
      row.metrics = Sorted(epoch.metrics());
      return row;
    }
    case JobEvent::kFinalResult: {
      const auto& result = event.final_result();
      row.kind = "final";
      if (result.has_test_loss()) row.loss = result.test_loss();
      if (result.has_test_accuracy()) row.accuracy = result.test_accuracy();
      row.current_bytes = result.peak_current_allocated_bytes();
      row.driver_bytes = result.peak_driver_allocated_bytes();
      return row;
    }
    case JobEvent::kEvaluation:
      row.kind = "evaluation";
      row.loss = event.evaluation().loss();
      row.accuracy = event.evaluation().accuracy();
      return row;
    case JobEvent::kBench:
      row.kind = "bench";
      row.samples_per_second = event.bench().samples_per_second();
      row.step_seconds = event.bench().seconds();
      return row;
    default:
      return std::nullopt;
  }
}

// Shortest text that reads back as the same double (%.17g would print 0.1 as 0.10000000000000001).
std::string Number(double value) {
  for (int digits = 6; digits <= 17; ++digits) {
    char buffer[40];
    snprintf(buffer, sizeof buffer, "%.*g", digits, value);
    if (std::strtod(buffer, nullptr) == value) return buffer;
  }
  return absl::StrCat(value);
}

}  // namespace

absl::StatusOr<RowFormat> ParseRowFormat(const std::string& field, const std::string& name) {
  if (name == "csv") return RowFormat::kCsv;
  if (name == "jsonl") return RowFormat::kJsonLines;
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": '", name.substr(0, 32), "' is not one of: csv, jsonl"));
}

std::string MetricRowsHeader(RowFormat format) {
  if (format != RowFormat::kCsv) return "";
  return absl::StrCat(absl::StrJoin(kColumns, ","), "\n");
}

bool AppendMetricRow(int64_t job_id, const JobEvent& event, RowFormat format, std::string* out) {
  const std::optional<Row> row = ToRow(event);
  if (!row.has_value()) return false;
  const absl::Time time =
      absl::FromUnixSeconds(event.time().seconds()) + absl::Nanoseconds(event.time().nanos());
  // Values in column order; unset ones stay nullopt.
  std::vector<std::optional<std::string>> values = {
      absl::StrCat(job_id), absl::StrCat(event.seq()),
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone()), row->kind};
  auto integer = [](const std::optional<int64_t>& v) -> std::optional<std::string> {
    if (!v) return std::nullopt;
    return absl::StrCat(*v);
  };
  auto real = [](const std::optional<double>& v) -> std::optional<std::string> {
    if (!v) return std::nullopt;
    return Number(*v);
  };
  values.push_back(integer(row->epoch));
  values.push_back(integer(row->batch));
  values.push_back(real(row->loss));
  values.push_back(real(row->accuracy));
  values.push_back(real(row->validation_loss));
  values.push_back(real(row->validation_accuracy));
  values.push_back(real(row->learning_rate));
  values.push_back(real(row->samples_per_second));
  values.push_back(real(row->step_seconds));
  values.push_back(integer(row->current_bytes));
  values.push_back(integer(row->driver_bytes));
  std::optional<std::string> metrics;  // "a=1;b=2" (CSV) or {"a":1,"b":2} (JSON), unset if none
  if (!row->metrics.empty()) {
    const bool csv = format == RowFormat::kCsv;
    std::vector<std::string> parts;
    for (const auto& [name, value] : row->metrics) {
      const std::string number = Number(value);
      const bool text = number == "nan" || number == "inf" || number == "-inf";
      parts.push_back(
          csv ? absl::StrCat(name, "=", number)
              : absl::StrCat("\"", name, "\":", text ? "\"" : "", number, text ? "\"" : ""));
    }
    metrics = csv ? absl::StrJoin(parts, ";") : absl::StrCat("{", absl::StrJoin(parts, ","), "}");
  }
  values.push_back(metrics);
  constexpr size_t kMetricsColumn = 15;

  if (format == RowFormat::kCsv) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out->push_back(',');
      if (values[i]) out->append(*values[i]);  // no value needs quoting: numbers, a time, a word
    }
    out->push_back('\n');
    return true;
  }
  out->push_back('{');
  bool first = true;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i]) continue;
    // The time and kind are strings, and so is a NaN or infinite loss (a diverged run: JSON has
    // no such numbers); everything else is a number.
    const bool text = i == 2 || i == 3 ||
                      (i != kMetricsColumn &&
                       (*values[i] == "nan" || *values[i] == "inf" || *values[i] == "-inf"));
    absl::StrAppend(out, first ? "" : ",", "\"", kColumns[i], "\":", text ? "\"" : "", *values[i],
                    text ? "\"" : "");
    first = false;
  }
  out->append("}\n");
  return true;
}

}  // namespace traind
