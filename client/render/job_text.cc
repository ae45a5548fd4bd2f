#include "client/render/job_text.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "common/event_values.h"
#include "common/job_result.h"
#include "common/job_spec.h"
#include "common/log_format.h"
#include "common/terminal_text.h"

namespace traind {

using trainer::v1::Job;

namespace {

absl::Time ToTime(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

double SecondsBetween(const google::protobuf::Timestamp& a, const google::protobuf::Timestamp& b) {
  return absl::ToDoubleSeconds(ToTime(b) - ToTime(a));
}

// The options a program's job has: the program reads its own (epochs, batch size, learning rate
// are its arguments, not the spec's, which leaves them unset).
std::string ProgramOptions(const trainer::v1::JobSpec& s) {
  std::vector<std::string> parts;
  if (s.has_threads()) parts.push_back(absl::StrCat("threads ", s.threads()));
  if (s.stop_at_accuracy() > 0) {
    parts.push_back(absl::StrFormat("stop at validation accuracy %.4g", s.stop_at_accuracy()));
  }
  return absl::StrJoin(parts, ", ");
}

std::string Options(const trainer::v1::JobSpec& s) {
  if (s.has_script()) return ProgramOptions(s);
  const int ranks = RankCount(s);
  std::vector<std::string> parts = {
      absl::StrCat("epochs ", s.epochs()),
      ranks > 1 ? absl::StrCat("batch ", s.batch_size(), " per rank (global ",
                               static_cast<int64_t>(s.batch_size()) * ranks, ")")
                : absl::StrCat("batch ", s.batch_size()),
      absl::StrFormat("%s lr %g", TerminalSafe(s.optimizer()), s.learning_rate()),
      absl::StrCat("seed ", s.seed())};
  if (s.optimizer() == "sgd" && s.momentum() > 0) {
    parts.push_back(
        absl::StrFormat("momentum %g%s", s.momentum(), s.nesterov() ? " nesterov" : ""));
  }
  if (s.weight_decay() > 0) parts.push_back(absl::StrFormat("weight decay %g", s.weight_decay()));
  if (s.limit_train() > 0) parts.push_back(absl::StrCat("limit-train ", s.limit_train()));
  if (s.limit_test() > 0) parts.push_back(absl::StrCat("limit-test ", s.limit_test()));
  if (s.has_threads()) parts.push_back(absl::StrCat("threads ", s.threads()));
  return absl::StrJoin(parts, ", ");
}

}  // namespace

std::string FormatTimestamp(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", ToTime(t), absl::LocalTimeZone());
}

namespace {

// "  program ..." for a user's program, "  model ..." for a built-in or TorchScript model.
void AppendWhatRuns(const trainer::v1::JobSpec& spec, std::string* out_ptr) {
  std::string& out = *out_ptr;
  if (spec.has_script()) {  // a user's program: what it runs, not a model
    const auto& script = spec.script();
    std::string command = script.interpreter().empty() ? "python3" : script.interpreter();
    for (const std::string& arg : script.args()) absl::StrAppend(&command, " ", arg);
    for (const auto& [name, value] : script.params()) {
      absl::StrAppend(&command, "  {", name, "}=", value);
    }
    absl::StrAppendFormat(&out, "  program   %s (%d files)\n", TerminalSafe(command),
                          script.files_size());
  } else {
    absl::StrAppendFormat(&out, "  model     %s on %s (%s)\n", TerminalSafe(spec.model()),
                          TerminalSafe(spec.dataset()), TerminalSafe(spec.data_dir()));
  }
}

// "  device ...": where the job's ranks run.
void AppendDevice(const trainer::v1::JobSpec& spec, std::string* out_ptr) {
  std::string& out = *out_ptr;
  std::string device = TerminalSafe(spec.device());
  if (!spec.devices().empty()) {
    device = absl::StrCat(TerminalSafe(spec.devices()), ", one rank each (data parallel)");
  } else if (spec.gpus() > 1) {
    device = absl::StrCat(spec.gpus(), " GPUs, any free, one rank each (data parallel)");
  } else if (spec.gpus() == 1) {
    device = "1 GPU, any free";
  } else if (spec.processes() > 1) {
    device += absl::StrCat(", ", spec.processes(), " ranks (data parallel)");
  }
  if (!spec.gradient_allreduce().empty()) {
    device += absl::StrCat(", gradients averaged in ", TerminalSafe(spec.gradient_allreduce()));
  }
  absl::StrAppendFormat(&out, "  device    %s\n", device);
}

// "  started ..." and "  ended ...".
void AppendTimes(const Job& job, std::string* out_ptr) {
  std::string& out = *out_ptr;
  if (job.has_start_time()) {
    absl::StrAppendFormat(&out, "  started   %s", FormatTimestamp(job.start_time()));
    if (job.runs() > 1) {
      absl::StrAppendFormat(&out, "  (resumed %d time%s, last at %s)", job.runs() - 1,
                            job.runs() == 2 ? "" : "s", FormatTimestamp(job.last_start_time()));
    }
    out += "\n";
  }
  if (job.has_end_time()) {
    absl::StrAppendFormat(&out, "  ended     %s", FormatTimestamp(job.end_time()));
    if (job.has_start_time()) {
      absl::StrAppendFormat(&out, "  (ran %s)",
                            FormatDuration(SecondsBetween(job.start_time(), job.end_time())));
    }
    out += "\n";
  }
}

// "  accuracy  test 82.25%, best validation 78.35% (epoch 2)": only what the job measured
// (common/job_result.h).
void AppendAccuracy(const Job& job, std::string* out_ptr) {
  const auto& result = job.result();
  std::vector<std::string> parts;
  if (ReportsTestAccuracy(job)) {
    parts.push_back(absl::StrFormat("test %.2f%%", result.test_accuracy() * 100));
  }
  if (ReportsValidation(job)) {
    parts.push_back(absl::StrFormat("best validation %.2f%% (epoch %d)",
                                    result.best_validation_accuracy() * 100, result.best_epoch()));
  }
  if (parts.empty()) return;
  absl::StrAppendFormat(out_ptr, "  accuracy  %s\n", absl::StrJoin(parts, ", "));
}

// Accuracy, an early stop, epoch times and peak memory.
void AppendResults(const Job& job, std::string* out_ptr) {
  std::string& out = *out_ptr;
  const auto& spec = job.spec();
  const auto& result = job.result();
  if (job.state() == Job::SUCCEEDED) AppendAccuracy(job, &out);
  if (result.has_stopped()) {
    // A program's epoch count is its own: the spec does not know it.
    const std::string of = spec.epochs() > 0 ? absl::StrCat(" of ", spec.epochs()) : "";
    absl::StrAppendFormat(&out, "  stopped   after epoch %d%s, %.2f s of training: %s\n",
                          result.stopped().epoch(), of, result.stopped().train_seconds(),
                          TerminalSafe(result.stopped().reason()));
  }
  if (result.epoch_seconds_no_eval_size() > 0) {
    std::vector<std::string> epochs;
    for (double s : result.epoch_seconds_no_eval())
      epochs.push_back(absl::StrFormat("%.2f", s / 60));
    absl::StrAppendFormat(&out, "  time      per epoch without evaluation: %s min\n",
                          absl::StrJoin(epochs, ", "));
  }
  if (result.total_seconds() > 0) {
    absl::StrAppendFormat(&out, "            training %.2f min, total %.2f min\n",
                          result.train_seconds() / 60, result.total_seconds() / 60);
  }
  if (result.peak_current_allocated_bytes() > 0) {
    if (absl::StartsWith(spec.device(), "cpu")) {  // on a CPU both are the process's RSS
      absl::StrAppendFormat(&out, "  memory    peak %s resident (RSS)\n",
                            FormatBytes(result.peak_current_allocated_bytes()));
    } else {
      absl::StrAppendFormat(&out, "  memory    peak %s allocated / %s reserved by the driver\n",
                            FormatBytes(result.peak_current_allocated_bytes()),
                            FormatBytes(result.peak_driver_allocated_bytes()));
    }
  }
}

// The profiler's operators and kernels.
void AppendProfile(const trainer::v1::JobResult& result, std::string* out_ptr) {
  std::string& out = *out_ptr;
  if (result.top_operators_size() > 0) {
    absl::StrAppendFormat(&out, "  profile   top operators by self time (trace: %s)\n",
                          TerminalSafe(result.trace_path()));
    for (const auto& op : result.top_operators()) {
      absl::StrAppendFormat(&out, "            %9.3f ms  %6d calls  %s\n", op.self_seconds() * 1000,
                            op.calls(), TerminalSafe(op.name()));
    }
  }
  if (result.top_kernels_size() > 0) {
    const int steps = std::max(1, result.profile_steps());
    absl::StrAppendFormat(&out,
                          "  kernels   %.3f ms of device time per step over %d steps; the "
                          "longest, per step:\n",
                          result.profile_kernel_seconds() * 1000 / steps, steps);
    for (const auto& k : result.top_kernels()) {
      absl::StrAppendFormat(&out, "            %9.3f ms  %6.1f calls  %s\n",
                            k.self_seconds() * 1000 / steps, static_cast<double>(k.calls()) / steps,
                            TerminalSafe(k.name()));
    }
  }
}

// Disk use and artifacts.
void AppendFiles(const Job& job, std::string* out_ptr) {
  std::string& out = *out_ptr;
  const auto& result = job.result();
  if (job.disk_bytes() > 0) {
    absl::StrAppendFormat(&out, "  disk      %s in the job's directory on the daemon\n",
                          FormatBytes(job.disk_bytes()));
  }
  for (const auto& a : result.artifacts()) {
    absl::StrAppendFormat(&out, "  artifact  %-5s %s, %s, epoch %d, sha256 %s\n",
                          TerminalSafe(a.name()), TerminalSafe(a.format()),
                          FormatBytes(a.size_bytes()), a.epoch(),
                          TerminalSafe(a.sha256().substr(0, 16)));
  }
}

}  // namespace

std::string DescribeJob(const Job& job) {
  const auto& spec = job.spec();
  const auto& result = job.result();
  // Every string below may come from another user or a job: escaped (TerminalSafe).
  std::string out =
      absl::StrFormat("Job %d  %s%s\n", job.id(), StateName(job.state()),
                      spec.name().empty() ? "" : "  (" + TerminalSafe(spec.name()) + ")");
  AppendWhatRuns(spec, &out);
  AppendDevice(spec, &out);
  if (const std::string options = Options(spec); !options.empty()) {
    absl::StrAppendFormat(&out, "  options   %s\n", options);
  }
  absl::StrAppendFormat(&out, "  created   %s\n", FormatTimestamp(job.create_time()));
  AppendTimes(job, &out);
  AppendResults(job, &out);
  AppendProfile(result, &out);
  AppendFiles(job, &out);
  if (result.has_evaluation()) out += DescribeEvaluation(result.evaluation(), job.spec().dataset());
  if (!result.error().empty()) {
    // Its lines indented, so a job's output cannot pass for one of the lines above.
    absl::StrAppendFormat(&out, "  error     %s\n",
                          absl::StrReplaceAll(TerminalSafe(result.error(), /*keep_newlines=*/true),
                                              {{"\n", "\n            "}}));
  }
  return out;
}

std::string DescribeEvaluation(const trainer::v1::Evaluation& e, const std::string& dataset) {
  std::string out = absl::StrFormat(
      "  evaluated %s on %s's test split (%d samples): accuracy %.2f%%, loss %.4f\n",
      TerminalSafe(e.weights()), TerminalSafe(dataset), e.samples(), e.accuracy() * 100, e.loss());
  const int classes = e.classes();
  if (classes == 0) return out;
  constexpr int kLargestMatrixShown = 20;
  const int listed = std::min({classes, e.class_accuracy_size(), e.class_samples_size()});
  out += "  per class ";
  for (int c = 0; c < std::min(listed, kLargestMatrixShown); ++c) {
    absl::StrAppendFormat(&out, "%s%d: %.1f%% of %d", c == 0 ? "" : ", ", c,
                          e.class_accuracy(c) * 100, e.class_samples(c));
  }
  if (listed > kLargestMatrixShown) {
    absl::StrAppendFormat(&out, ", ... (%d classes in all: -o json has each)", listed);
  }
  out += "\n";
  if (e.confusion_size() == 0) {
    return out + absl::StrFormat("  confusion not kept: %d classes (it is kept for at most %d)\n",
                                 classes, kMaxConfusionClasses);
  }
  if (classes > kLargestMatrixShown || e.confusion_size() != classes * classes) {
    return out + "  confusion (in -o json: confusion[true * classes + predicted])\n";
  }
  out += "  confusion rows: true class, columns: predicted\n            ";
  for (int c = 0; c < classes; ++c) absl::StrAppendFormat(&out, "%6d", c);
  out += "\n";
  for (int t = 0; t < classes; ++t) {
    absl::StrAppendFormat(&out, "      %4d  ", t);
    for (int p = 0; p < classes; ++p)
      absl::StrAppendFormat(&out, "%6d", e.confusion(t * classes + p));
    out += "\n";
  }
  return out;
}

namespace {

// EPOCHS in `list`: a running job's "2/5" (its newest step's epoch), else the epochs it asked for;
// a program's is what it printed ("2" when it gives no count), "-" before it printed any.
std::string EpochsCell(const Job& job) {
  const trainer::v1::JobSpec& spec = job.spec();
  if (spec.has_benchmark()) return "-";
  const trainer::v1::StepMetrics& step = job.latest_step();
  if (job.state() == Job::RUNNING && step.epoch() > 0) {
    const int epochs = step.epochs() > 0 ? step.epochs() : spec.epochs();
    return epochs > 0 ? absl::StrCat(step.epoch(), "/", epochs) : absl::StrCat(step.epoch());
  }
  if (spec.has_script()) {  // the epochs it reported steps or summaries of
    const int reached = std::max(step.epoch(), job.result().epoch_seconds_no_eval_size());
    return reached > 0 ? absl::StrCat(reached) : "-";
  }
  return absl::StrCat(spec.epochs());
}

// TIME in `list`: how long it has run (running) or ran (ended); "-" before it started. A trial
// paused at its rung ran its epochs: their training time (a clock since its start would go on).
std::string TimeCell(const Job& job) {
  if (!job.has_start_time()) return "-";
  if (job.state() == Job::PAUSED) return FormatDuration(TrainingSeconds(job));
  const absl::Time start = ToTime(job.start_time());
  const absl::Time end = job.has_end_time() ? ToTime(job.end_time()) : absl::Now();
  return FormatDuration(std::max(0.0, absl::ToDoubleSeconds(end - start)));
}

}  // namespace

std::string JobTable(const std::vector<Job>& jobs) {
  std::string out = absl::StrFormat("%-6s %-10s %-11s %-14s %-7s %-6s %-19s %-8s %-8s %-9s %s\n",
                                    "ID", "STATE", "MODEL", "DATASET", "DEVICE", "EPOCHS",
                                    "CREATED", "TIME", "TEST ACC", "DISK", "NAME");
  for (const Job& job : jobs) {
    const trainer::v1::JobSpec& spec = job.spec();
    const bool matmul = spec.has_benchmark() && spec.benchmark().kind() == "matmul";
    const std::string accuracy = ReportsTestAccuracy(job)
                                     ? absl::StrFormat("%.2f%%", job.result().test_accuracy() * 100)
                                     : "-";
    // A benchmark says what it measures where a training job names its model and data.
    const std::string model = matmul ? "matmul"
                              : spec.has_script() && !spec.script().args().empty()
                                  ? TerminalSafe(spec.script().args(0))
                              : spec.model().empty() ? "-"
                                                     : TerminalSafe(spec.model());
    const std::string dataset =
        matmul ? absl::StrFormat(
                     "n=%d %s", spec.benchmark().has_size() ? spec.benchmark().size() : 4096,
                     spec.benchmark().dtype().empty() ? "fp32"
                                                      : TerminalSafe(spec.benchmark().dtype()))
        : spec.dataset().empty() ? "-"
                                 : TerminalSafe(spec.dataset());
    absl::StrAppendFormat(
        &out, "%-6d %-10s %-11s %-14s %-7s %-6s %-19s %-8s %-8s %-9s %s\n", job.id(),
        StateName(job.state()), model, dataset, TerminalSafe(spec.device()), EpochsCell(job),
        FormatTimestamp(job.create_time()), TimeCell(job), accuracy,
        job.disk_bytes() > 0 ? FormatBytes(job.disk_bytes()) : "-", TerminalSafe(spec.name()));
  }
  return out;
}

}  // namespace traind
