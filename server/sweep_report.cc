#include "server/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/job_spec.h"
#include "common/spec_fields.h"
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
std::vector<std::string> VaryingFields(const trainer::v1::Sweep& sweep) {
  std::vector<std::string> fields;
  for (const auto& axis : sweep.spec().axes()) {
    const std::string name = CanonicalSpecField(axis.field());
    if (name != "model" && name != "device" && axis.values_size() > 1) fields.push_back(name);
  }
  // Fields set by explicit configurations vary too.
  std::set<std::string> seen(fields.begin(), fields.end());
  for (const auto& config : sweep.spec().configs()) {
    std::vector<const google::protobuf::FieldDescriptor*> set;
    config.GetReflection()->ListFields(config, &set);
    for (const auto* f : set) {
      if (f->name() != "model" && f->name() != "device" && f->name() != "name" &&
          f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE &&
          seen.insert(f->name()).second) {
        fields.push_back(f->name());
      }
    }
  }
  return fields;
}

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
bool NothingToCompare(const SweepReportOptions& options, trainer::v1::SweepReport* report) {
  const int baseline_rows = static_cast<int>(
      std::count_if(report->rows().begin(), report->rows().end(),
                    [](const ReportRow& r) { return r.is_baseline(); }));
  if (baseline_rows > 0 && baseline_rows < report->rows_size()) return false;
  report->set_no_speedup_reason(absl::StrCat(baseline_rows == 0 ? "no run used " : "every run used ",
                                             options.baseline_field, " ", options.baseline_value));
  report->clear_baseline_device();
  report->clear_baseline();
  for (ReportRow& row : *report->mutable_rows()) row.set_is_baseline(false);
  return true;
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
  const std::vector<std::string> varying = VaryingFields(sweep);

  // Rows in order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Job*>> groups;
  for (const Job& job : jobs) {
    if (IsTerminal(job.state())) report.set_jobs_finished(report.jobs_finished() + 1);
    std::string key = RowKey(job.spec());
    if (groups.find(key) == groups.end()) order.push_back(key);
    groups[key].push_back(&job);
  }

  std::map<std::string, int> row_index;
  for (const auto& key : order) {
    const std::vector<const Job*>& members = groups[key];
    const trainer::v1::JobSpec& spec = members.front()->spec();
    ReportRow* row = report.add_rows();
    row_index[key] = report.rows_size() - 1;
    row->set_model(spec.has_benchmark() && spec.benchmark().kind() == "matmul"
                       ? absl::StrCat("matmul ", spec.benchmark().size(), " ", spec.benchmark().dtype())
                       : spec.model());
    row->set_dataset(spec.dataset());
    row->set_device(spec.device());
    row->set_batch_size(spec.batch_size());
    std::vector<std::string> options_text;
    for (const std::string& field : varying) {
      if (field == "batch_size" || field == "dataset") continue;  // their own columns
      const std::string value = GetSpecField(spec, field);
      if (!value.empty()) options_text.push_back(absl::StrCat(field, "=", value));
    }
    row->set_options(absl::StrJoin(options_text, " "));
    row->set_config(absl::StrCat(row->model(), row->options().empty() ? "" : " ", row->options()));
    row->set_is_baseline(GetSpecField(spec, options.baseline_field) == options.baseline_value);
    row->set_runs(static_cast<int32_t>(members.size()));

    std::vector<double> seconds, losses, samples, to_accuracy, wall_to_accuracy;
    double accuracy_sum = 0;
    std::vector<std::string> errors;
    for (const Job* job : members) {
      row->add_job_ids(job->id());
      row->set_peak_current_allocated_bytes(std::max(row->peak_current_allocated_bytes(),
                                                     job->result().peak_current_allocated_bytes()));
      row->set_peak_driver_allocated_bytes(std::max(row->peak_driver_allocated_bytes(),
                                                    job->result().peak_driver_allocated_bytes()));
      if (job->state() == Job::FAILED || job->state() == Job::CANCELLED) {
        errors.push_back(absl::StrCat("job ", job->id(), " ", Job::State_Name(job->state()),
                                      job->result().error().empty() ? "" : ": ",
                                      job->result().error().substr(0, 120)));
      }
      if (job->state() != Job::SUCCEEDED) continue;
      row->set_succeeded(row->succeeded() + 1);
      const double s = MeanEpochSeconds(*job);
      seconds.push_back(s);
      accuracy_sum += job->result().test_accuracy();
      if (job->result().batch_size() > 0) row->set_batch_size(job->result().batch_size());
      auto it = traces.find(job->id());
      if (options.time_to_accuracy > 0 && it != traces.end()) {
        for (const JobTrace::Evaluated& e : it->second.evaluated) {
          if (e.validation_accuracy >= options.time_to_accuracy) {
            to_accuracy.push_back(e.train_seconds);
            wall_to_accuracy.push_back(e.wall_seconds);
            break;
          }
        }
      }
      if (job->result().has_bench()) {
        samples.push_back(job->result().bench().samples_per_second());
      } else if (it != traces.end() && !it->second.steps.empty() && s > 0) {
        const auto& last = it->second.steps.back();
        // A data-parallel step trains every rank's batch.
        const int ranks = RankCount(job->spec());
        samples.push_back(static_cast<double>(last.batches_per_epoch()) * row->batch_size() *
                          ranks / s);
        losses.push_back(it->second.final_train_loss > 0 ? it->second.final_train_loss
                                                         : last.loss());
        if (row->loss_curve().empty()) {
          for (const auto& m : it->second.steps) {
            auto* point = row->add_loss_curve();
            point->set_epoch(m.epoch() - 1 +
                             static_cast<double>(m.batch()) / std::max(1, m.batches_per_epoch()));
            point->set_loss(m.loss());
          }
        }
      }
    }
    if (!seconds.empty()) {
      row->set_epoch_seconds_median(Median(seconds));
      row->set_epoch_seconds_min(*std::min_element(seconds.begin(), seconds.end()));
      row->set_epoch_seconds_max(*std::max_element(seconds.begin(), seconds.end()));
      row->set_test_accuracy(accuracy_sum / row->succeeded());
      row->set_samples_per_second(Median(samples));
      double loss_sum = 0;
      for (double l : losses) loss_sum += l;
      row->set_final_loss(losses.empty() ? 0 : loss_sum / losses.size());
    }
    row->set_reached(static_cast<int32_t>(to_accuracy.size()));
    if (!to_accuracy.empty()) {
      row->set_time_to_accuracy_seconds(Median(to_accuracy));
      row->set_time_to_accuracy_min(*std::min_element(to_accuracy.begin(), to_accuracy.end()));
      row->set_time_to_accuracy_max(*std::max_element(to_accuracy.begin(), to_accuracy.end()));
      row->set_wall_to_accuracy_seconds(Median(wall_to_accuracy));
    }
    if (options.time_to_accuracy > 0 && row->succeeded() > row->reached()) {
      row->add_flags(absl::StrFormat("%d of %d runs never reached validation accuracy %g",
                                     row->succeeded() - row->reached(), row->succeeded(),
                                     options.time_to_accuracy));
    }
    if (!errors.empty()) {
      row->add_flags(absl::StrCat(errors.size(), " of ", members.size(), " runs did not succeed (",
                                  errors.front(), ")"));
    }
  }

  if (NothingToCompare(options, &report)) return report;

  // Speedup and agreement against the row that differs at most in the baseline field and has the
  // baseline value there: the same configuration on the baseline device, by default.
  const std::string against = BaselineLabel(options);
  for (const auto& key : order) {
    ReportRow* row = report.mutable_rows(row_index[key]);
    trainer::v1::JobSpec probe = groups[key].front()->spec();
    if (!SetSpecField(&probe, options.baseline_field, options.baseline_value).ok()) continue;
    auto base = row_index.find(RowKey(probe));
    if (base == row_index.end()) continue;
    const ReportRow& baseline = report.rows(base->second);
    if (baseline.succeeded() == 0 || row->succeeded() == 0) continue;
    if (row->epoch_seconds_median() > 0) {
      row->set_speedup(baseline.epoch_seconds_median() / row->epoch_seconds_median());
    }
    if ((options.baseline_field == "processes" || options.baseline_field == "gpus") &&
        row->speedup() > 0) {
      const double ranks = RankCount(groups[key].front()->spec());
      const double baseline_ranks = RankCount(probe);
      row->set_scaling_efficiency(row->speedup() * baseline_ranks / ranks);
    }
    if (row->is_baseline()) continue;
    const bool is_training = baseline.final_loss() > 0;
    if (is_training &&
        std::abs(row->test_accuracy() - baseline.test_accuracy()) > options.accuracy_tolerance) {
      row->add_flags(absl::StrFormat("test accuracy %.2f%% vs %.2f%% %s",
                                     row->test_accuracy() * 100, baseline.test_accuracy() * 100,
                                     against));
    }
    if (is_training && std::abs(row->final_loss() - baseline.final_loss()) >
                           options.loss_tolerance * baseline.final_loss()) {
      row->add_flags(absl::StrFormat("final loss %.4f vs %.4f %s", row->final_loss(),
                                     baseline.final_loss(), against));
    }
  }
  return report;
}

}  // namespace traind
