#include <limits>

#include "absl/strings/str_cat.h"
#include "common/job_spec.h"
#include "common/spec_fields.h"
#include "common/spec_ranges.h"
#include "gtest/gtest.h"
#include "server/sweep_expansion.h"
#include "server/sweep_report.h"

namespace traind {
namespace {

using trainer::v1::Job;
using trainer::v1::SweepSpec;

SweepSpec Grid() {
  SweepSpec spec;
  spec.mutable_base()->set_dataset("fashion-mnist");
  spec.mutable_base()->set_epochs(1);
  auto* models = spec.add_axes();
  models->set_field("model");
  models->add_values("lenet5");
  models->add_values("mlp");
  auto* devices = spec.add_axes();
  devices->set_field("device");
  devices->add_values("cpu");
  devices->add_values("cuda");
  auto* threads = spec.add_axes();
  threads->set_field("threads");  // camelCase and snake_case both work
  threads->add_values("1");
  threads->add_values("2");
  spec.set_repeat(2);
  return spec;
}

TEST(SweepExpansionTest, GridTimesRepeatInterleaved) {
  auto members = ExpandSweep(Grid());
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 16u);
  EXPECT_EQ((*members)[0].model(), "lenet5");
  EXPECT_EQ((*members)[0].device(), "cpu");
  EXPECT_EQ((*members)[0].threads(), 1);
  EXPECT_EQ((*members)[1].threads(), 2);
  EXPECT_EQ((*members)[7].model(), "mlp");
  // The second repeat starts after every configuration ran once.
  EXPECT_EQ((*members)[8].SerializeAsString(), (*members)[0].SerializeAsString());
  EXPECT_EQ((*members)[3].epochs(), 1);
}

TEST(SweepExpansionTest, AnAxisTwiceOrAValueTwiceIsRefused) {
  SweepSpec twice = Grid();
  auto* again = twice.add_axes();
  again->set_field("seed");
  again->add_values("1");
  again->add_values("2");
  *twice.add_axes() = *again;  // two seed axes: every member twice
  auto members = ExpandSweep(twice);
  EXPECT_EQ(members.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(members.status().message().find("'seed' is an axis twice"), std::string::npos)
      << members.status();

  SweepSpec same_value = Grid();
  auto* lr = same_value.add_axes();
  lr->set_field("learning_rate");
  lr->add_values("1e-3");
  lr->add_values("0.001");  // the same number written another way
  members = ExpandSweep(same_value);
  EXPECT_EQ(members.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(members.status().message().find("'learning_rate' has the value 0.001 twice"),
            std::string::npos)
      << members.status();

  SweepSpec params;
  params.mutable_base()->mutable_script()->add_args("train.py");
  auto* seeds = params.add_axes();
  seeds->set_field("param.seed");
  seeds->add_values("1");
  seeds->add_values("1");
  EXPECT_EQ(ExpandSweep(params).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SweepExpansionTest, AProgramsParamsAreAxesLikeFields) {
  trainer::v1::SweepSpec spec;
  spec.mutable_base()->mutable_script()->add_args("train.py");
  spec.mutable_base()->mutable_script()->add_args("--seed={seed}");
  for (const auto& [field, values] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"device", {"cpu", "cuda"}}, {"param.seed", {"1", "2"}}}) {
    trainer::v1::SweepAxis* axis = spec.add_axes();
    axis->set_field(field);
    for (const std::string& value : values) axis->add_values(value);
  }
  auto members = ExpandSweep(spec);
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 4u);
  EXPECT_EQ((*members)[1].device(), "cpu");
  EXPECT_EQ((*members)[1].script().params().at("seed"), "2");
  EXPECT_EQ((*members)[2].device(), "cuda");
  // The arguments keep their placeholder: members differ in their params only.
  EXPECT_EQ((*members)[3].script().args(1), "--seed={seed}");
}

TEST(SweepExpansionTest, ExplicitConfigsMergeOntoTheBase) {
  SweepSpec spec;
  spec.mutable_base()->set_epochs(1);
  spec.mutable_base()->set_dataset("fake");
  spec.add_configs()->set_model("vgg16");
  auto* resnet = spec.add_configs();
  resnet->set_model("resnet18");
  resnet->set_image_size(224);
  auto* devices = spec.add_axes();
  devices->set_field("device");
  devices->add_values("cpu");
  devices->add_values("cuda");
  auto members = ExpandSweep(spec);
  ASSERT_TRUE(members.ok());
  ASSERT_EQ(members->size(), 4u);
  EXPECT_EQ((*members)[2].model(), "resnet18");
  EXPECT_EQ((*members)[2].image_size(), 224);
  EXPECT_EQ((*members)[2].dataset(), "fake");
}

TEST(SweepExpansionTest, BadAxesNameTheField) {
  SweepSpec spec = Grid();
  spec.mutable_axes(2)->set_field("thread_count");
  EXPECT_NE(ExpandSweep(spec).status().message().find("thread_count"), std::string::npos);
  spec = Grid();
  spec.mutable_axes(2)->set_values(0, "two");
  EXPECT_EQ(ExpandSweep(spec).status().message(),
            "threads: 'two' is not an integer from -2147483648 to 2147483647");
  spec = Grid();
  spec.set_repeat(5000);
  EXPECT_EQ(ExpandSweep(spec).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SweepExpansionTest, BatchSizeAutoIsAValueLikeANumber) {
  SweepSpec spec;
  spec.mutable_base()->set_model("mlp");
  spec.mutable_base()->set_batch_size_auto(true);  // a number on the axis turns the search off
  auto* sizes = spec.add_axes();
  sizes->set_field("batch_size");
  sizes->add_values("auto");
  sizes->add_values("64");
  auto members = ExpandSweep(spec);
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_TRUE((*members)[0].batch_size_auto());
  EXPECT_EQ(GetSpecField((*members)[0], "batch_size"), "auto");
  EXPECT_FALSE((*members)[1].batch_size_auto());
  EXPECT_EQ(GetSpecField((*members)[1], "batch_size"), "64");
  sizes->set_values(1, "big");
  EXPECT_EQ(ExpandSweep(spec).status().message(),
            "batch_size: expected 'auto' or an integer from 1 to 1048576, got 'big'");
}

TEST(SweepExpansionTest, MembersMayNotMultiplyALargeBaseIntoGigabytes) {
  SweepSpec spec = Grid();
  spec.mutable_base()->set_name(std::string(4 << 20, 'x'));  // 16 members of 4 MiB each
  absl::StatusOr<std::vector<trainer::v1::JobSpec>> members = ExpandSweep(spec);
  EXPECT_EQ(members.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(members.status().message().find("at most 64 MiB: 16 members"), std::string::npos)
      << members.status();
  spec.set_repeat(1);
  spec.mutable_base()->set_name(std::string(1 << 20, 'x'));  // 8 members of 1 MiB: fine
  EXPECT_TRUE(ExpandSweep(spec).ok());
}

// Issue "integers and values that cannot run": a value refused in a job is refused on an axis,
// in the base and in a configuration too, naming the field, before any member is copied.
TEST(SweepExpansionTest, ValuesAreHeldToTheFieldsRanges) {
  SweepSpec spec = Grid();
  auto* rates = spec.add_axes();
  rates->set_field("lr");
  rates->add_values("1e-3");
  rates->add_values("1e300");  // "float overflow" at run time
  EXPECT_EQ(ExpandSweep(spec).status().message(),
            "learning_rate: must be greater than 0 and at most 1e+30, got 1e+300");
  rates->set_values(1, "1e30");
  EXPECT_TRUE(ExpandSweep(spec).ok()) << ExpandSweep(spec).status();

  spec = Grid();
  auto* sizes = spec.add_axes();
  sizes->set_field("batchSize");
  sizes->add_values("2000000");
  EXPECT_EQ(ExpandSweep(spec).status().message(), "batch_size: must be 1 to 1048576, got 2000000");
  sizes->set_values(0, "auto");  // the search: no number to check
  EXPECT_TRUE(ExpandSweep(spec).ok()) << ExpandSweep(spec).status();

  spec = Grid();
  auto* padding = spec.add_axes();
  padding->set_field("random-crop");  // trainctl's flag name
  padding->add_values("1000000");     // "storage size overflowed" at run time
  EXPECT_EQ(ExpandSweep(spec).status().message(),
            "random_crop_padding: must be 0 to 256, got 1000000");

  spec = Grid();
  spec.mutable_base()->set_epochs(0);
  EXPECT_EQ(ExpandSweep(spec).status().message(), "epochs: must be 1 to 100000, got 0");
  spec = Grid();
  spec.add_configs()->set_model("mlp");
  spec.add_configs()->set_limit_test(-1);
  EXPECT_EQ(ExpandSweep(spec).status().message(), "limit_test: must be 0 to 2147483647, got -1");
}

// An axis value may be a path (4096 bytes), but the field it sets keeps its own bound: a 4,000-byte
// name or model was stored in every member before.
TEST(SweepExpansionTest, ValuesAreHeldToTheFieldsLengths) {
  for (const char* field : {"name", "model", "optimizer", "time_limit"}) {
    SweepSpec spec = Grid();
    auto* axis = spec.add_axes();
    axis->set_field(field);
    axis->add_values(std::string(4000, 'n'));
    const absl::Status expanded = ExpandSweep(spec).status();
    EXPECT_EQ(expanded.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(expanded.message().find("at most 256 bytes, got 4000"), std::string::npos)
        << field << ": " << expanded;
  }
  SweepSpec paths = Grid();
  auto* dirs = paths.add_axes();
  dirs->set_field("data_dir");
  dirs->add_values("/data/" + std::string(3000, 'd'));  // a path may be this long
  EXPECT_TRUE(ExpandSweep(paths).ok()) << ExpandSweep(paths).status();
}

// Every field of the range table that an axis can set is checked there: a value just outside
// each range is refused with that field's message.
TEST(SweepExpansionTest, EveryRangedFieldIsCheckedOnAnAxis) {
  const auto* descriptor = trainer::v1::JobSpec::descriptor();
  for (const SpecFieldRange& range : SpecFieldRanges()) {
    const auto* field = descriptor->FindFieldByName(range.field);
    if (field == nullptr) continue;  // inside benchmark or debug: not on an axis
    using google::protobuf::FieldDescriptor;
    std::string outside;
    if (range.kind == SpecFieldRange::Kind::kReal) {
      outside = absl::StrCat(range.real_max * 2 + 1);
    } else {
      const uint64_t type_max = field->cpp_type() == FieldDescriptor::CPPTYPE_INT32
                                    ? std::numeric_limits<int32_t>::max()
                                : field->cpp_type() == FieldDescriptor::CPPTYPE_UINT32
                                    ? std::numeric_limits<uint32_t>::max()
                                : field->cpp_type() == FieldDescriptor::CPPTYPE_INT64
                                    ? std::numeric_limits<int64_t>::max()
                                    : std::numeric_limits<uint64_t>::max();
      // Above the range where the type goes higher, else below it (a signed type's top).
      outside = range.int_max >= 0 && static_cast<uint64_t>(range.int_max) < type_max
                    ? absl::StrCat(static_cast<uint64_t>(range.int_max) + 1)
                    : absl::StrCat(range.int_min - 1);
    }
    SweepSpec spec = Grid();
    auto* axis = spec.add_axes();
    axis->set_field(range.field);
    axis->add_values(outside);
    const absl::Status status = ExpandSweep(spec).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << range.field << " = " << outside;
    EXPECT_EQ(status.message().rfind(absl::StrCat(range.field, ": must be "), 0), 0u) << status;
  }
}

// The members that ExpandSweep returns go through the whole validation in CreateSweep
// (PrepareSpec: ApplyDefaults, then ValidateJobSpec), whose first step is the same table.
TEST(SweepExpansionTest, MembersPassTheJobValidation) {
  auto members = ExpandSweep(Grid());
  ASSERT_TRUE(members.ok()) << members.status();
  for (trainer::v1::JobSpec member : *members) {
    ApplyDefaults(&member);
    EXPECT_TRUE(ValidateJobSpec(member).ok()) << ValidateJobSpec(member);
  }
}

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
