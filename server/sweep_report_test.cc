// The sweep report: medians over repeats, speedups, flags, its bound, programs' rows, time to
// accuracy, baselines by another field.
#include "server/sweep_report.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/sweep_test_grid.h"

namespace traind {
namespace {

using trainer::v1::Job;
using trainer::v1::SweepSpec;

Job Finished(int64_t id, const std::string& model, const std::string& device, double seconds,
             double accuracy) {
  Job job;
  job.set_id(id);
  job.set_state(Job::SUCCEEDED);
  job.mutable_spec()->set_model(model);
  job.mutable_spec()->set_dataset("fashion-mnist");
  job.mutable_spec()->set_device(device);
  job.mutable_spec()->set_batch_size(128);
  job.mutable_result()->add_epoch_seconds_no_eval(seconds);
  job.mutable_result()->set_test_accuracy(accuracy);
  job.mutable_result()->set_peak_current_allocated_bytes(1000 * id);
  return job;
}

TEST(SweepReportTest, MediansSpeedupsAndFlags) {
  trainer::v1::Sweep sweep;
  sweep.set_id(7);
  *sweep.mutable_spec() = Grid();
  sweep.mutable_spec()->mutable_axes()->RemoveLast();  // no threads axis
  std::vector<Job> jobs = {
      Finished(1, "lenet5", "cpu", 10, 0.84), Finished(2, "lenet5", "cuda:0", 2, 0.84),
      Finished(3, "lenet5", "cpu", 12, 0.84), Finished(4, "lenet5", "cuda:0", 4, 0.70),
      Finished(5, "lenet5", "cpu", 11, 0.84), Finished(6, "lenet5", "cuda:0", 3, 0.70),
  };
  jobs.push_back(Finished(8, "mlp", "cpu", 1, 0.83));
  Job failed = Finished(9, "mlp", "cuda:0", 0, 0);
  failed.set_state(Job::FAILED);
  failed.mutable_result()->set_error("boom");
  jobs.push_back(failed);
  std::map<int64_t, JobTrace> traces;
  for (int64_t id : {1, 2, 3, 4, 5, 6, 8}) {
    trainer::v1::StepMetrics m;
    m.set_epoch(1);
    m.set_batch(400);
    m.set_batches_per_epoch(421);
    m.set_loss(2.0);  // the last logged step; the epoch's mean loss below is what counts
    traces[id].steps.push_back(m);
    traces[id].final_train_loss = id == 4 || id == 6 ? 0.9 : 0.4;
  }
  auto report = BuildSweepReport(sweep, jobs, traces, SweepReportOptions{});
  ASSERT_EQ(report.rows_size(), 4);
  EXPECT_EQ(report.jobs_total(), 8);
  EXPECT_EQ(report.jobs_finished(), 8);
  const auto& cpu = report.rows(0);
  EXPECT_EQ(cpu.device(), "cpu");
  EXPECT_EQ(cpu.runs(), 3);
  EXPECT_DOUBLE_EQ(cpu.epoch_seconds_median(), 11);
  EXPECT_DOUBLE_EQ(cpu.epoch_seconds_min(), 10);
  EXPECT_DOUBLE_EQ(cpu.epoch_seconds_max(), 12);
  EXPECT_DOUBLE_EQ(cpu.speedup(), 1.0);
  EXPECT_NEAR(cpu.samples_per_second(), 421.0 * 128 / 11, 1e-9);
  EXPECT_TRUE(cpu.flags().empty());
  const auto& gpu = report.rows(1);
  EXPECT_DOUBLE_EQ(gpu.epoch_seconds_median(), 3);
  EXPECT_NEAR(gpu.speedup(), 11.0 / 3, 1e-12);
  EXPECT_NEAR(gpu.test_accuracy(), (0.84 + 0.70 + 0.70) / 3, 1e-12);
  ASSERT_EQ(gpu.flags_size(), 2);  // accuracy and loss both disagree with the CPU
  EXPECT_NE(gpu.flags(0).find("vs 84.00% on cpu"), std::string::npos) << gpu.flags(0);
  EXPECT_EQ(gpu.loss_curve_size(), 1);
  EXPECT_NEAR(gpu.final_loss(), (0.4 + 0.9 + 0.9) / 3, 1e-12);
  const auto& mlp_gpu = report.rows(3);
  EXPECT_EQ(mlp_gpu.succeeded(), 0);
  EXPECT_DOUBLE_EQ(mlp_gpu.speedup(), 0);
  ASSERT_EQ(mlp_gpu.flags_size(), 1);
  EXPECT_NE(mlp_gpu.flags(0).find("boom"), std::string::npos);
}

// An hour of a program's steps (36,000) is a curve of at most kMaxLossCurvePoints, its last step
// kept; and a report of rows too large for one reply leaves rows out, never the best or the
// baseline, and says how many (a sweep of 20 such rows was 8 MB before).
TEST(SweepReportTest, AReportFitsOneReplyAndKeepsItsBestAndBaselineRows) {
  trainer::v1::Sweep sweep;
  sweep.set_id(9);
  *sweep.mutable_spec() = Grid();
  sweep.mutable_spec()->mutable_axes()->RemoveLast();
  std::map<int64_t, JobTrace> traces;
  for (int i = 1; i <= 36000; ++i) {
    trainer::v1::StepMetrics m;
    m.set_epoch(1 + i / 3600);
    m.set_batch(i % 3600 + 1);
    m.set_batches_per_epoch(3600);
    m.set_loss(1.0 / i);
    traces[1].steps.push_back(m);
  }
  auto thinned =
      BuildSweepReport(sweep, {Finished(1, "lenet5", "cpu", 5, 0.8)}, traces, SweepReportOptions{});
  ASSERT_EQ(thinned.rows_size(), 1);
  EXPECT_LE(thinned.rows(0).loss_curve_size(), static_cast<int>(kMaxLossCurvePoints));
  EXPECT_GE(thinned.rows(0).loss_curve_size(), static_cast<int>(kMaxLossCurvePoints) - 2);
  EXPECT_DOUBLE_EQ(thinned.rows(0).loss_curve().rbegin()->loss(), 1.0 / 36000);

  trainer::v1::SweepReport report;
  for (int i = 0; i < 100; ++i) {
    trainer::v1::ReportRow* row = report.add_rows();
    row->add_job_ids(i + 1);
    row->set_options(std::string(50000, 'o'));
    row->set_is_baseline(i == 3);
    row->set_best(i == 70);
  }
  BoundReportSize(&report, 3 << 20);
  EXPECT_LE(report.ByteSizeLong(), size_t{3} << 20);
  EXPECT_EQ(report.rows_size() + report.rows_not_shown(), 100);
  EXPECT_GT(report.rows_not_shown(), 0);
  bool best = false, baseline = false;
  int64_t previous = 0;
  for (const trainer::v1::ReportRow& row : report.rows()) {
    best |= row.best();
    baseline |= row.is_baseline();
    EXPECT_GT(row.job_ids(0), previous);  // the report's order
    previous = row.job_ids(0);
  }
  EXPECT_TRUE(best && baseline);
}

// A job can report steps but no epoch time (a program that prints no epoch summary): its row
// still has the loss and the curve; only the rate needs a time. Steps that do not know their
// epoch's batch count are placed by their order in the epoch.
TEST(SweepReportTest, StepsWithoutAnEpochTimeStillGiveTheLossCurve) {
  trainer::v1::Sweep sweep;
  sweep.set_id(8);
  *sweep.mutable_spec() = Grid();
  sweep.mutable_spec()->mutable_axes()->RemoveLast();
  Job job = Finished(1, "lenet5", "cpu", 0, 0.84);
  job.mutable_result()->clear_epoch_seconds_no_eval();
  std::map<int64_t, JobTrace> traces;
  for (int epoch : {1, 2}) {
    for (int batch : {1, 2}) {
      trainer::v1::StepMetrics m;
      m.set_epoch(epoch);
      m.set_batch(batch);  // its place among the epoch's lines: no batch count printed
      m.set_loss(1.5);
      traces[1].steps.push_back(m);
    }
  }
  // A second run of the row times its epoch but still prints no batch count: no rate from it.
  // A third knows both: the row's rate is the third's alone.
  Job timed = Finished(2, "lenet5", "cpu", 5, 0.84);
  traces[2] = traces[1];
  Job counted = Finished(3, "lenet5", "cpu", 4, 0.84);
  trainer::v1::StepMetrics known;
  known.set_epoch(1);
  known.set_batch(400);
  known.set_batches_per_epoch(421);
  known.set_loss(1.5);
  traces[3].steps.push_back(known);
  auto report = BuildSweepReport(sweep, {job, timed, counted}, traces, SweepReportOptions{});
  ASSERT_EQ(report.rows_size(), 1);
  const auto& row = report.rows(0);
  ASSERT_EQ(row.loss_curve_size(), 4);
  EXPECT_DOUBLE_EQ(row.loss_curve(0).epoch(), 0.5);
  EXPECT_DOUBLE_EQ(row.loss_curve(1).epoch(), 1.0);
  EXPECT_DOUBLE_EQ(row.loss_curve(2).epoch(), 1.5);
  EXPECT_DOUBLE_EQ(row.loss_curve(3).epoch(), 2.0);
  EXPECT_DOUBLE_EQ(row.final_loss(), 1.5);
  EXPECT_NEAR(row.samples_per_second(), 421.0 * 128 / 4, 1e-9);
}

// A program's sweep over learning rates: its runs printed validation accuracies but no test
// accuracy. The rows say so (tested 0, not a test accuracy of 0), carry each row's best
// validation accuracy, and the best row is chosen by it.
TEST(SweepReportTest, AProgramsRowsHaveWhatItPrintedAndTheBestRowWins) {
  trainer::v1::Sweep sweep;
  sweep.set_id(11);
  sweep.mutable_spec()->mutable_base()->mutable_script()->add_args("train.py");
  auto* axis = sweep.mutable_spec()->add_axes();
  axis->set_field("param.lr");
  axis->add_values("0.1");
  axis->add_values("0.5");
  std::vector<Job> jobs;
  for (int i = 0; i < 2; ++i) {
    Job job;
    job.set_id(i + 1);
    job.set_state(Job::SUCCEEDED);
    job.mutable_spec()->set_device("cpu");
    job.mutable_spec()->mutable_script()->add_args("train.py");
    (*job.mutable_spec()->mutable_script()->mutable_params())["lr"] = i == 0 ? "0.1" : "0.5";
    job.mutable_result()->add_epoch_seconds_no_eval(1);
    job.mutable_result()->set_best_validation_accuracy(i == 0 ? 0.57 : 0.77);
    job.mutable_result()->set_best_epoch(2);
    jobs.push_back(job);
  }
  const auto report = BuildSweepReport(sweep, jobs, {}, SweepReportOptions{});
  ASSERT_EQ(report.rows_size(), 2);
  EXPECT_EQ(report.best_by(), "best validation accuracy");
  for (const auto& row : report.rows()) {
    EXPECT_EQ(row.tested(), 0) << row.config();
    EXPECT_EQ(row.validated(), 1) << row.config();
    EXPECT_EQ(row.model(), "train.py");
  }
  EXPECT_EQ(report.rows(0).config(), "train.py param.lr=0.1");
  EXPECT_FALSE(report.rows(0).best());
  EXPECT_TRUE(report.rows(1).best());
  EXPECT_DOUBLE_EQ(report.rows(1).best_validation_accuracy(), 0.77);

  // With a test accuracy on every row, it decides: built-in jobs always test.
  std::vector<Job> built_in = {Finished(1, "lenet5", "cpu", 10, 0.84),
                               Finished(2, "mlp", "cpu", 10, 0.86)};
  trainer::v1::Sweep models;
  models.set_id(12);
  *models.mutable_spec() = Grid();
  const auto by_test = BuildSweepReport(models, built_in, {}, SweepReportOptions{});
  EXPECT_EQ(by_test.best_by(), "test accuracy");
  ASSERT_EQ(by_test.rows_size(), 2);
  EXPECT_TRUE(by_test.rows(1).best());
  EXPECT_EQ(by_test.rows(0).tested(), 1);

  // A search ranks by validation accuracy: so does its table, where the two disagree.
  for (Job& job : built_in) job.mutable_result()->set_best_epoch(10);
  built_in[0].mutable_result()->set_best_validation_accuracy(0.88);
  built_in[1].mutable_result()->set_best_validation_accuracy(0.85);
  SweepReportOptions search_options;
  search_options.validation_first = true;
  const auto by_validation = BuildSweepReport(models, built_in, {}, search_options);
  EXPECT_EQ(by_validation.best_by(), "best validation accuracy");
  EXPECT_TRUE(by_validation.rows(0).best());
  EXPECT_FALSE(by_validation.rows(1).best());
}

// --time-to-accuracy: from each run's evaluated epochs, the first that reached the threshold.
TEST(SweepReportTest, TimeToAccuracyIsTheMedianOfTheRunsThatReachedIt) {
  trainer::v1::Sweep sweep;
  sweep.set_id(9);
  *sweep.mutable_spec() = Grid();
  sweep.mutable_spec()->mutable_axes()->RemoveLast();
  std::vector<Job> jobs = {
      Finished(1, "lenet5", "cpu", 10, 0.9), Finished(2, "lenet5", "cpu", 10, 0.9),
      Finished(3, "lenet5", "cpu", 10, 0.9), Finished(4, "mlp", "cpu", 10, 0.8)};
  std::map<int64_t, JobTrace> traces;
  // Runs 1-3 reach 0.89 at their 3rd, 2nd and 4th evaluation; the mlp never does.
  const std::vector<std::vector<double>> accuracy = {
      {0.80, 0.88, 0.891, 0.90}, {0.85, 0.895, 0.9}, {0.8, 0.85, 0.87, 0.89}, {0.7, 0.8}};
  for (int64_t id = 1; id <= 4; ++id) {
    traces[id].final_train_loss = 0.4;
    for (size_t e = 0; e < accuracy[id - 1].size(); ++e) {
      traces[id].evaluated.push_back({accuracy[id - 1][e], 1.0 * (e + 1), 1.5 * (e + 1) + 0.5});
    }
  }
  SweepReportOptions options;
  options.time_to_accuracy = 0.89;
  const auto report = BuildSweepReport(sweep, jobs, traces, options);
  ASSERT_EQ(report.rows_size(), 2);
  EXPECT_EQ(report.rows(0).reached(), 3);
  EXPECT_DOUBLE_EQ(report.rows(0).time_to_accuracy_seconds(), 3.0);  // of 3, 2 and 4 s
  EXPECT_DOUBLE_EQ(report.rows(0).time_to_accuracy_min(), 2.0);
  EXPECT_DOUBLE_EQ(report.rows(0).time_to_accuracy_max(), 4.0);
  EXPECT_DOUBLE_EQ(report.rows(0).wall_to_accuracy_seconds(), 5.0);  // of 5, 3.5 and 6.5
  EXPECT_EQ(report.rows(1).reached(), 0);
  EXPECT_DOUBLE_EQ(report.rows(1).time_to_accuracy_seconds(), 0);
  ASSERT_FALSE(report.rows(1).flags().empty());
  EXPECT_NE(report.rows(1).flags(0).find("never reached validation accuracy 0.89"),
            std::string::npos);
}

// --baseline amp=: each bf16 row against the fp32 row of the same model and device, whatever the
// device; the fp32 rows are the baselines. A field that does not exist is refused.
TEST(SweepReportTest, BaselineByAnotherField) {
  trainer::v1::Sweep sweep;
  sweep.set_id(8);
  *sweep.mutable_spec() = Grid();
  std::vector<Job> jobs = {
      Finished(1, "lenet5", "cuda:0", 4, 0.84), Finished(2, "lenet5", "cuda:0", 2, 0.84),
      Finished(3, "lenet5", "cpu", 12, 0.84), Finished(4, "lenet5", "cpu", 10, 0.70)};
  jobs[1].mutable_spec()->set_amp("bf16");
  jobs[3].mutable_spec()->set_amp("bf16");
  SweepReportOptions options;
  ASSERT_TRUE(ParseBaseline("amp=", &options).ok());
  EXPECT_EQ(options.baseline_field, "amp");
  EXPECT_EQ(options.baseline_value, "");
  std::map<int64_t, JobTrace> traces;
  for (int64_t id : {1, 2, 3, 4}) {
    trainer::v1::StepMetrics m;
    m.set_epoch(1);
    m.set_batches_per_epoch(421);
    traces[id].steps.push_back(m);
    traces[id].final_train_loss = 0.4;  // a training run: accuracy is compared
  }
  const auto report = BuildSweepReport(sweep, jobs, traces, options);
  ASSERT_EQ(report.rows_size(), 4);
  EXPECT_EQ(report.baseline(), "amp=");
  EXPECT_EQ(report.baseline_device(), "");
  EXPECT_TRUE(report.rows(0).is_baseline());
  EXPECT_DOUBLE_EQ(report.rows(0).speedup(), 1.0);
  EXPECT_FALSE(report.rows(1).is_baseline());
  EXPECT_DOUBLE_EQ(report.rows(1).speedup(), 2.0);  // cuda bf16 against cuda fp32
  EXPECT_DOUBLE_EQ(report.rows(3).speedup(), 1.2);  // cpu bf16 against cpu fp32
  ASSERT_EQ(report.rows(3).flags_size(), 1);
  EXPECT_NE(report.rows(3).flags(0).find("vs 84.00% with amp="), std::string::npos)
      << report.rows(3).flags(0);

  // The default, and a device given alone, are device baselines.
  SweepReportOptions by_device;
  ASSERT_TRUE(ParseBaseline("cuda:0", &by_device).ok());
  EXPECT_EQ(by_device.baseline_field, "device");
  const auto against_gpu = BuildSweepReport(sweep, jobs, traces, by_device);
  EXPECT_DOUBLE_EQ(against_gpu.rows(2).speedup(), 4.0 / 12);  // cpu fp32 against cuda fp32
  EXPECT_TRUE(against_gpu.rows(1).is_baseline());

  SweepReportOptions bad;
  absl::Status unknown = ParseBaseline("colour=red", &bad);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("unknown job field 'colour'"), std::string::npos) << unknown;
  EXPECT_EQ(ParseBaseline("threads=many", &bad).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseBaseline("", &bad).code(), absl::StatusCode::kInvalidArgument);

  // Values are compared as jobs store them: amp=fp32 is no autocast, cuda is cuda:0.
  SweepReportOptions fp32;
  ASSERT_TRUE(ParseBaseline("amp=fp32", &fp32).ok());
  EXPECT_EQ(fp32.baseline_value, "");
  EXPECT_EQ(fp32.baseline_text, "amp=fp32");
  EXPECT_DOUBLE_EQ(BuildSweepReport(sweep, jobs, traces, fp32).rows(1).speedup(), 2.0);
  SweepReportOptions cuda;
  ASSERT_TRUE(ParseBaseline("cuda", &cuda).ok());
  EXPECT_EQ(cuda.baseline_value, "cuda:0");
}

}  // namespace
}  // namespace traind
