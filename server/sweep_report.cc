#include "server/sweep_report.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/job_result.h"
#include "common/job_spec.h"
#include "common/spec_fields.h"
#include "common/sweep_fields.h"
#include "server/job_fold.h"

namespace traind {

using trainer::v1::Job;
using trainer::v1::ReportRow;

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The fields that vary across the sweep, model and device excluded: they label a row.
// Everything but the name (a label) identifies a row's configuration, device included.
std::string RowKey(const trainer::v1::JobSpec& spec) {
  trainer::v1::JobSpec key = spec;
  key.clear_name();
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  key.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

double MeanEpochSeconds(const Job& job) {
  if (job.result().has_bench()) return job.result().bench().seconds();
  const auto& epochs = job.result().epoch_seconds_no_eval();
  if (epochs.empty()) return 0;
  double sum = 0;
  for (double s : epochs) sum += s;
  return sum / epochs.size();
}

// How flags name the baseline: "on cpu", "with amp=".
std::string BaselineLabel(const SweepReportOptions& options) {
  return absl::StrCat(options.baseline_field == "device" ? "on " : "with ", options.baseline_text);
}

}  // namespace

absl::Status ParseBaseline(const std::string& text, SweepReportOptions* options) {
  if (text.empty()) return absl::InvalidArgumentError("baseline: empty; e.g. cpu or amp=fp32");
  const size_t equals = text.find('=');
  const std::string field =
      equals == std::string::npos ? "device" : CanonicalSpecField(text.substr(0, equals));
  if (field.empty() || field == "name") {
    return absl::InvalidArgumentError(absl::StrCat(
        "baseline: unknown job field '", text.substr(0, equals),
        "'; give a device (cpu, cuda:0) or FIELD=VALUE with a job field, e.g. amp=fp32 or "
        "threads=1"));
  }
  const std::string value = equals == std::string::npos ? text : text.substr(equals + 1);
  trainer::v1::JobSpec probe;  // the value must be one the field can hold
  if (absl::Status valid = SetSpecField(&probe, field, value); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("baseline: ", valid.message()));
  }
  // Compared with jobs as they are stored: with defaults applied (amp=fp32 is no amp) and the
  // device resolved as submit resolves it.
  ApplyDefaults(&probe);
  std::string stored = GetSpecField(probe, field);
  if (field == "device" && stored == "cuda") stored = "cuda:0";
  options->baseline_field = field;
  options->baseline_value = stored;
  options->baseline_text = text;
  return absl::OkStatus();
}

namespace {

// A sweep of one device (or of one value of the baseline's field) compares nothing: every row
// would be its own "1.00x (baseline)". Then the report says why and no row is the baseline.
// The winning row, by the first measure every row with a succeeded run has: test accuracy, best
// validation accuracy (a program may print no test accuracy), else the lowest final loss; the two
// accuracies the other way round when `validation_first`. A benchmark's rows have none of them,
// and no row wins.
void ChooseBest(bool validation_first, trainer::v1::SweepReport* report) {
  struct Measure {
    const char* name;
    bool (*has)(const ReportRow&);
    double (*value)(const ReportRow&);  // higher is better
  };
  static constexpr Measure kMeasures[] = {
      {"test accuracy", [](const ReportRow& r) { return r.tested() > 0; },
       [](const ReportRow& r) { return r.test_accuracy(); }},
      {"best validation accuracy", [](const ReportRow& r) { return r.validated() > 0; },
       [](const ReportRow& r) { return r.best_validation_accuracy(); }},
      {"final loss", [](const ReportRow& r) { return r.final_loss() > 0; },
       [](const ReportRow& r) { return -r.final_loss(); }},
  };
  std::vector<ReportRow*> rows;
  for (ReportRow& row : *report->mutable_rows()) {
    if (row.succeeded() > 0) rows.push_back(&row);
  }
  if (rows.empty()) return;
  std::vector<const Measure*> order = {&kMeasures[0], &kMeasures[1], &kMeasures[2]};
  if (validation_first) std::swap(order[0], order[1]);
  for (const Measure* in_order : order) {
    const Measure& measure = *in_order;
    if (!std::all_of(rows.begin(), rows.end(), [&](ReportRow* r) { return measure.has(*r); })) {
      continue;
    }
    ReportRow* best = *std::max_element(rows.begin(), rows.end(), [&](ReportRow* a, ReportRow* b) {
      return measure.value(*a) < measure.value(*b);
    });
    best->set_best(true);
    report->set_best_by(measure.name);
    return;
  }
}

bool NothingToCompare(const SweepReportOptions& options, trainer::v1::SweepReport* report) {
  const int baseline_rows =
      static_cast<int>(std::count_if(report->rows().begin(), report->rows().end(),
                                     [](const ReportRow& r) { return r.is_baseline(); }));
  if (baseline_rows > 0 && baseline_rows < report->rows_size()) return false;
  report->set_no_speedup_reason(
      absl::StrCat(baseline_rows == 0 ? "no run used " : "every run used ", options.baseline_field,
                   " ", options.baseline_value));
  report->clear_baseline_device();
  report->clear_baseline();
  for (ReportRow& row : *report->mutable_rows()) row.set_is_baseline(false);
  return true;
}

}  // namespace

namespace {

// What one row's runs measured, gathered run by run (AddRun) and then summarised (SummariseRuns).
struct RowRuns {
  std::vector<double> epoch_seconds, losses, samples_per_second, to_accuracy, wall_to_accuracy;
  double accuracy_sum = 0;          // over the runs with a test accuracy (ReportRow.tested)
  double best_validation_sum = 0;   // over the runs that validated (ReportRow.validated)
  std::vector<std::string> errors;  // runs that failed or were cancelled
};

// A row's identity: its configuration (the sweep's varying fields) and whether it is a baseline.
void DescribeRow(const trainer::v1::JobSpec& spec, const std::vector<std::string>& varying,
                 const SweepReportOptions& options, int runs, ReportRow* row) {
  // A program's sweep names its program where a built-in one names its model.
  row->set_model(
      spec.has_benchmark() && spec.benchmark().kind() == "matmul"
          ? absl::StrCat("matmul ", spec.benchmark().size(), " ", spec.benchmark().dtype())
      : spec.has_script() && !spec.script().args().empty() ? spec.script().args(0)
                                                           : spec.model());
  row->set_dataset(spec.dataset());
  row->set_device(spec.device());
  row->set_batch_size(spec.batch_size());
  std::vector<std::string> options_fields;
  for (const std::string& field : varying) {
    if (field != "batch_size" && field != "dataset") options_fields.push_back(field);  // columns
  }
  row->set_options(MemberLabel(spec, options_fields));
  row->set_config(absl::StrCat(
      row->model(), row->options().empty() || row->model().empty() ? "" : " ", row->options()));
  row->set_is_baseline(GetSpecField(spec, options.baseline_field) == options.baseline_value);
  row->set_runs(runs);
}

// The first evaluation of `trace` that reached the target accuracy, into `runs`.
void AddTimeToAccuracy(const JobTrace& trace, double target, RowRuns* runs) {
  for (const JobTrace::Evaluated& e : trace.evaluated) {
    if (e.validation_accuracy >= target) {
      runs->to_accuracy.push_back(e.train_seconds);
      runs->wall_to_accuracy.push_back(e.wall_seconds);
      return;
    }
  }
}

// The training loss curve of a row's first run that has one, against epochs. A step that does
// not know its epoch's batch count (a program printing `{'loss': 0.3, 'epoch': 1.0}`, whose
// batch is then its place among the epoch's lines) is placed by its order among its epoch's
// steps: the k-th of n at epoch - 1 + k/n.
void AddLossCurve(const JobTrace& trace, ReportRow* row) {
  if (!row->loss_curve().empty()) return;
  std::map<int32_t, int> steps_in_epoch;
  for (const auto& m : trace.steps) ++steps_in_epoch[m.epoch()];
  std::map<int32_t, int> seen_in_epoch;
  // An hour of a program's steps is 36,000 points: every stride-th, and the last, are enough for
  // a chart, and keep a sweep of many rows within one reply.
  const size_t count = trace.steps.size();
  const size_t stride = (count + kMaxLossCurvePoints - 2) / (kMaxLossCurvePoints - 1);
  for (size_t i = 0; i < count; ++i) {
    const auto& m = trace.steps[i];
    const int place = ++seen_in_epoch[m.epoch()];
    if (stride > 1 && i % stride != 0 && i + 1 != count) continue;
    const double within = m.batches_per_epoch() > 0
                              ? static_cast<double>(m.batch()) / m.batches_per_epoch()
                              : static_cast<double>(place) / steps_in_epoch[m.epoch()];
    auto* point = row->add_loss_curve();
    point->set_epoch(m.epoch() - 1 + within);
    point->set_loss(m.loss());
  }
}

void AddRun(const Job& job, const std::map<int64_t, JobTrace>& traces,
            const SweepReportOptions& options, ReportRow* row, RowRuns* runs) {
  row->add_job_ids(job.id());
  row->set_peak_current_allocated_bytes(
      std::max(row->peak_current_allocated_bytes(), job.result().peak_current_allocated_bytes()));
  row->set_peak_driver_allocated_bytes(
      std::max(row->peak_driver_allocated_bytes(), job.result().peak_driver_allocated_bytes()));
  if (job.state() == Job::FAILED || job.state() == Job::CANCELLED) {
    runs->errors.push_back(absl::StrCat("job ", job.id(), " ", Job::State_Name(job.state()),
                                        job.result().error().empty() ? "" : ": ",
                                        job.result().error().substr(0, 120)));
  }
  if (job.state() != Job::SUCCEEDED) return;
  row->set_succeeded(row->succeeded() + 1);
  const double seconds = MeanEpochSeconds(job);
  runs->epoch_seconds.push_back(seconds);
  if (ReportsTestAccuracy(job)) {  // a program that printed none has none, not 0
    row->set_tested(row->tested() + 1);
    runs->accuracy_sum += job.result().test_accuracy();
  }
  if (ReportsValidation(job)) {
    row->set_validated(row->validated() + 1);
    runs->best_validation_sum += job.result().best_validation_accuracy();
  }
  if (job.result().batch_size() > 0) row->set_batch_size(job.result().batch_size());
  const auto trace = traces.find(job.id());
  if (options.time_to_accuracy > 0 && trace != traces.end()) {
    AddTimeToAccuracy(trace->second, options.time_to_accuracy, runs);
  }
  if (job.result().has_bench()) {
    runs->samples_per_second.push_back(job.result().bench().samples_per_second());
  } else if (trace != traces.end() && !trace->second.steps.empty()) {
    const auto& last = trace->second.steps.back();
    // Only the rate needs the epoch's time and batch count; the loss and its curve need only the
    // steps (a program's job may report steps without either).
    if (seconds > 0 && last.batches_per_epoch() > 0) {
      // A data-parallel step trains every rank's batch.
      const int ranks = RankCount(job.spec());
      runs->samples_per_second.push_back(static_cast<double>(last.batches_per_epoch()) *
                                         row->batch_size() * ranks / seconds);
    }
    runs->losses.push_back(trace->second.final_train_loss > 0 ? trace->second.final_train_loss
                                                              : last.loss());
    AddLossCurve(trace->second, row);
  }
}

void SummariseRuns(const RowRuns& runs, const SweepReportOptions& options, ReportRow* row) {
  if (!runs.epoch_seconds.empty()) {
    const auto [fastest, slowest] =
        std::minmax_element(runs.epoch_seconds.begin(), runs.epoch_seconds.end());
    row->set_epoch_seconds_median(Median(runs.epoch_seconds));
    row->set_epoch_seconds_min(*fastest);
    row->set_epoch_seconds_max(*slowest);
    if (row->tested() > 0) row->set_test_accuracy(runs.accuracy_sum / row->tested());
    if (row->validated() > 0) {
      row->set_best_validation_accuracy(runs.best_validation_sum / row->validated());
    }
    row->set_samples_per_second(Median(runs.samples_per_second));
    double loss_sum = 0;
    for (double l : runs.losses) loss_sum += l;
    row->set_final_loss(runs.losses.empty() ? 0 : loss_sum / runs.losses.size());
  }
  row->set_reached(static_cast<int32_t>(runs.to_accuracy.size()));
  if (!runs.to_accuracy.empty()) {
    const auto [first, last] =
        std::minmax_element(runs.to_accuracy.begin(), runs.to_accuracy.end());
    row->set_time_to_accuracy_seconds(Median(runs.to_accuracy));
    row->set_time_to_accuracy_min(*first);
    row->set_time_to_accuracy_max(*last);
    row->set_wall_to_accuracy_seconds(Median(runs.wall_to_accuracy));
  }
  if (options.time_to_accuracy > 0 && row->succeeded() > row->reached()) {
    row->add_flags(absl::StrFormat("%d of %d runs never reached validation accuracy %g",
                                   row->succeeded() - row->reached(), row->succeeded(),
                                   options.time_to_accuracy));
  }
  if (!runs.errors.empty()) {
    row->add_flags(absl::StrCat(runs.errors.size(), " of ", row->runs(), " runs did not succeed (",
                                runs.errors.front(), ")"));
  }
}

// Speedup, scaling efficiency and agreement of `row` (of runs of `spec`) against `baseline`.
void Compare(const trainer::v1::JobSpec& spec, const trainer::v1::JobSpec& baseline_spec,
             const ReportRow& baseline, const SweepReportOptions& options, ReportRow* row) {
  if (row->epoch_seconds_median() > 0) {
    row->set_speedup(baseline.epoch_seconds_median() / row->epoch_seconds_median());
  }
  if ((options.baseline_field == "processes" || options.baseline_field == "gpus") &&
      row->speedup() > 0) {
    const double ranks = RankCount(spec);
    row->set_scaling_efficiency(row->speedup() * RankCount(baseline_spec) / ranks);
  }
  if (row->is_baseline()) return;
  const std::string against = BaselineLabel(options);
  const bool is_training = baseline.final_loss() > 0;
  if (is_training && baseline.tested() > 0 && row->tested() > 0 &&
      std::abs(row->test_accuracy() - baseline.test_accuracy()) > options.accuracy_tolerance) {
    row->add_flags(absl::StrFormat("test accuracy %.2f%% vs %.2f%% %s", row->test_accuracy() * 100,
                                   baseline.test_accuracy() * 100, against));
  }
  if (is_training && std::abs(row->final_loss() - baseline.final_loss()) >
                         options.loss_tolerance * baseline.final_loss()) {
    row->add_flags(absl::StrFormat("final loss %.4f vs %.4f %s", row->final_loss(),
                                   baseline.final_loss(), against));
  }
}

}  // namespace

trainer::v1::SweepReport BuildSweepReport(const trainer::v1::Sweep& sweep,
                                          const std::vector<Job>& jobs,
                                          const std::map<int64_t, JobTrace>& traces,
                                          const SweepReportOptions& options) {
  trainer::v1::SweepReport report;
  report.set_sweep_id(sweep.id());
  report.set_name(sweep.spec().name());
  if (options.baseline_field == "device") report.set_baseline_device(options.baseline_value);
  report.set_baseline(options.baseline_text);
  report.set_jobs_total(static_cast<int32_t>(jobs.size()));
  // Rows in order of first appearance, each the runs of one configuration.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Job*>> groups;
  for (const Job& job : jobs) {
    if (IsTerminal(job.state())) report.set_jobs_finished(report.jobs_finished() + 1);
    std::string key = RowKey(job.spec());
    if (groups.find(key) == groups.end()) order.push_back(key);
    groups[key].push_back(&job);
  }
  const std::vector<std::string> varying = VaryingFields(sweep.spec());
  std::map<std::string, int> row_index;
  for (const auto& key : order) {
    const std::vector<const Job*>& members = groups[key];
    row_index[key] = report.rows_size();
    ReportRow* row = report.add_rows();
    DescribeRow(members.front()->spec(), varying, options, static_cast<int>(members.size()), row);
    RowRuns runs;
    for (const Job* job : members) AddRun(*job, traces, options, row, &runs);
    SummariseRuns(runs, options, row);
  }
  ChooseBest(options.validation_first, &report);
  if (NothingToCompare(options, &report)) return report;
  // Each row against the row that differs at most in the baseline field and has the baseline
  // value there: the same configuration on the baseline device, by default.
  for (const auto& key : order) {
    const trainer::v1::JobSpec& spec = groups[key].front()->spec();
    trainer::v1::JobSpec probe = spec;
    if (!SetSpecField(&probe, options.baseline_field, options.baseline_value).ok()) continue;
    const auto base = row_index.find(RowKey(probe));
    if (base == row_index.end()) continue;
    ReportRow* row = report.mutable_rows(row_index[key]);
    const ReportRow& baseline = report.rows(base->second);
    if (baseline.succeeded() == 0 || row->succeeded() == 0) continue;
    Compare(spec, probe, baseline, options, row);
  }
  return report;
}

void BoundReportSize(trainer::v1::SweepReport* report, size_t max_bytes) {
  if (report->ByteSizeLong() <= max_bytes) return;
  const int count = report->rows_size();
  size_t bytes = report->ByteSizeLong();
  for (const trainer::v1::ReportRow& row : report->rows()) bytes -= row.ByteSizeLong() + 4;
  // The best and the baseline first (they are what the report is read for), then the others in
  // order while they fit; the rows kept stay in the report's order.
  std::vector<bool> keep(count, false);
  for (const bool wanted : {true, false}) {
    for (int i = 0; i < count; ++i) {
      const trainer::v1::ReportRow& row = report->rows(i);
      if ((row.best() || row.is_baseline()) != wanted) continue;
      const size_t size = row.ByteSizeLong() + 4;
      if (wanted || bytes + size <= max_bytes) {
        bytes += size;
        keep[i] = true;
      }
    }
  }
  google::protobuf::RepeatedPtrField<trainer::v1::ReportRow> kept;
  for (int i = 0; i < count; ++i) {
    if (keep[i]) {
      kept.Add()->Swap(report->mutable_rows(i));
    } else {
      report->set_rows_not_shown(report->rows_not_shown() + 1);
    }
  }
  report->mutable_rows()->Swap(&kept);
}

}  // namespace traind
