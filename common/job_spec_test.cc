#include "common/job_spec.h"

#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace traind {
namespace {

using trainer::v1::JobSpec;

JobSpec Valid() {
  JobSpec spec;
  spec.set_model("lenet5");
  spec.set_dataset("fashion-mnist");
  ApplyDefaults(&spec);
  return spec;
}

TEST(JobSpecTest, DefaultsAreTheReferenceScripts) {
  JobSpec spec = Valid();
  EXPECT_EQ(spec.epochs(), 1);
  EXPECT_EQ(spec.batch_size(), 128);
  EXPECT_DOUBLE_EQ(spec.learning_rate(), 1e-3);
  EXPECT_EQ(spec.optimizer(), "adam");
  EXPECT_EQ(spec.seed(), 123u);
  EXPECT_EQ(spec.log_every(), 100);
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
}

// A job is sent whole to whoever reads it: a spec that would not fit a default client's 4 MiB
// reply (20,000 files of long names in a program's working directory) is refused at submit.
TEST(JobSpecTest, ASpecTooLargeToReadBackIsRefused) {
  JobSpec spec;
  spec.mutable_script()->add_args("train.py");
  for (int i = 0; i < 20000; ++i) {
    trainer::v1::ScriptFile* file = spec.mutable_script()->add_files();
    file->set_path("data/" + std::string(200, 'f') + std::to_string(i) + ".txt");
    file->set_digest("sha256:" + std::string(64, '0'));
  }
  const absl::Status status = ValidateJobSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message().rfind("spec: at most 3145728 bytes", 0), 0u) << status;
}

// "fp32" is accepted as "no autocast" (so a sweep can put it on an amp axis beside bf16) and
// stored as the default, the empty amp.
TEST(JobSpecTest, AmpFp32IsNoAutocast) {
  JobSpec spec = Valid();
  spec.set_amp("fp32");
  ApplyDefaults(&spec);
  EXPECT_EQ(spec.amp(), "");
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
  spec.set_amp("bf16");
  ApplyDefaults(&spec);
  EXPECT_EQ(spec.amp(), "bf16");
}

TEST(JobSpecTest, ExplicitValuesSurviveDefaults) {
  JobSpec spec;
  spec.set_epochs(7);
  spec.set_seed(0);
  ApplyDefaults(&spec);
  EXPECT_EQ(spec.epochs(), 7);
  EXPECT_EQ(spec.seed(), 0u);
}

TEST(JobSpecTest, UnknownModelNamesTheAllowedOnes) {
  JobSpec spec = Valid();
  spec.set_model("nosuch");
  absl::Status status = ValidateJobSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "model: unknown value 'nosuch'; allowed: lenet5, mlp, resnet18, vgg16, torchscript");
}

TEST(JobSpecTest, UnknownDatasetAndOptimizer) {
  JobSpec spec = Valid();
  spec.set_dataset("imagenet");
  EXPECT_EQ(ValidateJobSpec(spec).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ValidateJobSpec(spec).message().find("dataset"), absl::string_view::npos);
  spec = Valid();
  spec.set_optimizer("rmsprop");
  EXPECT_NE(ValidateJobSpec(spec).message().find("allowed: adam, adamw, sgd"),
            absl::string_view::npos);
}

TEST(JobSpecTest, NonPositiveNumbersAreRefused) {
  for (int value : {0, -1}) {
    JobSpec spec = Valid();
    spec.set_epochs(value);
    EXPECT_EQ(ValidateJobSpec(spec).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(ValidateJobSpec(spec).message().find("epochs"), absl::string_view::npos);
    spec = Valid();
    spec.set_batch_size(value);
    EXPECT_NE(ValidateJobSpec(spec).message().find("batch_size"), absl::string_view::npos);
    spec = Valid();
    spec.set_learning_rate(value);
    EXPECT_NE(ValidateJobSpec(spec).message().find("learning_rate"), absl::string_view::npos);
  }
}

TEST(JobSpecTest, DeviceNames) {
  EXPECT_TRUE(ValidateDeviceName("cpu").ok());
  EXPECT_TRUE(ValidateDeviceName("cuda").ok());
  EXPECT_TRUE(ValidateDeviceName("cuda:3").ok());
  EXPECT_TRUE(ValidateDeviceName("mps").ok());
  EXPECT_EQ(ValidateDeviceName("gpu").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateDeviceName("cuda:x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateDeviceName("cuda:-1").code(), absl::StatusCode::kInvalidArgument);
}

TEST(JobSpecTest, MnistNeedsADirectory) {
  JobSpec spec = Valid();
  spec.set_dataset("mnist");
  EXPECT_NE(ValidateJobSpec(spec).message().find("data_dir"), absl::string_view::npos);
  spec.set_data_dir("/data/mnist");
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
}

TEST(JobSpecTest, JsonJobFile) {
  JobSpec spec;
  ASSERT_TRUE(
      ParseJobSpecJson(R"({"model": "mlp", "dataset": "fashion-mnist", "batchSize": 64})", &spec)
          .ok());
  EXPECT_EQ(spec.model(), "mlp");
  EXPECT_EQ(spec.batch_size(), 64);
  absl::Status bad = ParseJobSpecJson(R"({"modle": "mlp"})", &spec);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("modle"), absl::string_view::npos);
}

// Issue "hostile input": values that cannot train are refused at submit, not at run time.
// A matmul benchmark reads no files: naming one (someone else's upload, to have it removed with
// this job) is refused.
TEST(JobSpecTest, AMatmulBenchmarkNamesNoFiles) {
  JobSpec spec;
  spec.mutable_benchmark()->set_kind("matmul");
  spec.mutable_benchmark()->set_size(64);
  spec.mutable_benchmark()->set_dtype("fp32");
  ApplyDefaults(&spec);
  ASSERT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
  spec.set_model_file("sha256:" + std::string(64, 'a'));
  EXPECT_EQ(ValidateJobSpec(spec).message(),
            "model_file, data_file, init_from, data_dir: not for a matmul benchmark");
  spec.clear_model_file();
  spec.set_init_from("7:best");
  EXPECT_FALSE(ValidateJobSpec(spec).ok());
}

TEST(JobSpecTest, NonFiniteAndNegativeTrainingValuesAreRefused) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    void (*set)(trainer::v1::JobSpec*, double);
    double value;
    const char* message;
  };
  const Case cases[] = {
      {[](trainer::v1::JobSpec* s, double v) { s->set_learning_rate(v); }, inf,
       "learning_rate: must be greater than 0 and at most 1e+30, got inf"},
      {[](trainer::v1::JobSpec* s, double v) { s->set_learning_rate(v); }, nan,
       "learning_rate: must be greater than 0 and at most 1e+30, got nan"},
      {[](trainer::v1::JobSpec* s, double v) { s->set_momentum(v); }, nan,
       "momentum: must be 0 or more and less than 1, got nan"},
      {[](trainer::v1::JobSpec* s, double v) { s->set_weight_decay(v); }, -0.5,
       "weight_decay: must be 0 to 1, got -0.5"},
  };
  for (const Case& c : cases) {
    trainer::v1::JobSpec spec = Valid();
    c.set(&spec, c.value);
    const absl::Status status = ValidateJobSpec(spec);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(status.message(), c.message);
  }
  trainer::v1::JobSpec fine = Valid();
  fine.set_optimizer("sgd");
  fine.set_momentum(0.9);
  fine.set_weight_decay(0);
  EXPECT_TRUE(ValidateJobSpec(fine).ok()) << ValidateJobSpec(fine);
}

// Issue "integers and values that cannot run": every number is held to its range at submit
// (common/spec_ranges.h), on the training path and the matmul benchmark's alike.
TEST(JobSpecTest, NumbersOutsideTheirRangeAreRefusedNamingTheField) {
  const std::vector<std::pair<std::function<void(JobSpec*)>, std::string>> cases = {
      {[](JobSpec* s) { s->set_batch_size(2000000); },
       "batch_size: must be 1 to 1048576, got 2000000"},
      {[](JobSpec* s) { s->set_learning_rate(1e300); },
       "learning_rate: must be greater than 0 and at most 1e+30, got 1e+300"},
      {[](JobSpec* s) { s->set_limit_test(-1); }, "limit_test: must be 0 to 2147483647, got -1"},
      {[](JobSpec* s) { s->set_random_crop_padding(1 << 30); },
       "random_crop_padding: must be 0 to 256, got 1073741824"},
      {[](JobSpec* s) { s->set_epochs(kMaxEpochs + 1); },
       "epochs: must be 1 to 100000, got 100001"},
      {[](JobSpec* s) { s->set_stop_at_accuracy(89); },
       "stop_at_accuracy: must be 0 to 1, got 89 (a fraction: 0.89 for 89%)"},
      {[](JobSpec* s) { s->mutable_debug()->set_step_delay_ms(1001); },
       "debug.step_delay_ms: must be 0 to 1000, got 1001"},
      {[](JobSpec* s) { s->set_processes(65); }, "processes: must be 0 to 64, got 65"},
  };
  for (const auto& [set, message] : cases) {
    JobSpec spec = Valid();
    set(&spec);
    const absl::Status status = ValidateJobSpec(spec);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_EQ(status.message(), message);
  }
  JobSpec edge = Valid();  // the ends themselves are allowed
  edge.set_batch_size(1 << 20);
  edge.set_learning_rate(1e30);  // tests/fault_test.cc diverges with it
  edge.set_limit_train(2147483647);
  edge.set_random_crop_padding(256);
  EXPECT_TRUE(ValidateJobSpec(edge).ok()) << ValidateJobSpec(edge);

  JobSpec matmul;
  matmul.mutable_benchmark()->set_kind("matmul");
  matmul.mutable_benchmark()->set_size(65537);
  ApplyDefaults(&matmul);
  EXPECT_EQ(ValidateJobSpec(matmul).message(), "benchmark.size: must be 1 to 65536, got 65537");
  matmul.mutable_benchmark()->set_size(65536);
  matmul.set_threads(0);
  EXPECT_EQ(ValidateJobSpec(matmul).message(), "threads: must be 1 to 1024, got 0");
}

// Options that the chosen optimizer would ignore are refused, not silently dropped.
TEST(JobSpecTest, OptionsTheOptimizerWouldIgnoreAreRefused) {
  JobSpec spec = Valid();  // adam
  spec.set_momentum(0.9);
  EXPECT_EQ(ValidateJobSpec(spec).message(), "momentum: only with optimizer sgd, not 'adam'");
  spec.set_momentum(0);  // no momentum, said explicitly: nothing is dropped
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
  spec.set_optimizer("adamw");
  spec.set_nesterov(true);
  EXPECT_EQ(ValidateJobSpec(spec).message(), "nesterov: only with optimizer sgd, not 'adamw'");
  spec.set_optimizer("sgd");  // LibTorch's SGD refuses Nesterov without momentum, at run time
  const absl::Status no_momentum = ValidateJobSpec(spec);
  EXPECT_EQ(no_momentum.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(no_momentum.message().rfind("nesterov: needs momentum greater than 0", 0), 0u)
      << no_momentum;
  spec.set_momentum(0.9);
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
  spec.set_weight_decay(1e-4);  // every optimizer has one
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
}

// A benchmark's fields of the other kind would be ignored: refused.
TEST(JobSpecTest, BenchmarkFieldsOfTheOtherKindAreRefused) {
  JobSpec matmul;
  matmul.mutable_benchmark()->set_kind("matmul");
  matmul.mutable_benchmark()->set_steps(10);
  ApplyDefaults(&matmul);
  const absl::Status steps = ValidateJobSpec(matmul);
  EXPECT_EQ(steps.message().rfind("benchmark.steps: only for benchmark kind train", 0), 0u)
      << steps;
  matmul.mutable_benchmark()->clear_steps();
  EXPECT_TRUE(ValidateJobSpec(matmul).ok()) << ValidateJobSpec(matmul);

  JobSpec train = Valid();
  train.mutable_benchmark()->set_kind("train");
  ApplyDefaults(&train);
  EXPECT_TRUE(ValidateJobSpec(train).ok()) << ValidateJobSpec(train);
  train.mutable_benchmark()->set_repeat(3);
  const absl::Status repeat = ValidateJobSpec(train);
  EXPECT_EQ(repeat.message().rfind("benchmark.repeat: only for benchmark kind matmul", 0), 0u)
      << repeat;
}

// A job on Slurm: tasks through processes, resources as sbatch's; what would reach sbatch's
// command line is held to plain words, and Slurm's fields need backend slurm.
TEST(JobSpecTest, HostsNameDistinctTraindsAndSpreadTheRanksEvenly) {
  auto refused = [](const JobSpec& spec, const std::string& field, const std::string& says) {
    absl::Status status = ValidateJobSpec(spec);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_EQ(status.message().rfind(field + ":", 0), 0u) << status;
    EXPECT_NE(status.message().find(says), absl::string_view::npos) << status;
  };
  JobSpec spec = Valid();
  spec.set_device("cpu");
  spec.set_hosts("a,b");
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
  EXPECT_EQ(RankCount(spec), 2);  // one per host by default
  EXPECT_EQ(RanksPerHost(spec), 1);
  EXPECT_EQ(HostNames(spec), (std::vector<std::string>{"a", "b"}));
  spec.set_processes(4);
  EXPECT_EQ(RankCount(spec), 4);
  EXPECT_EQ(RanksPerHost(spec), 2);
  JobSpec gpus = spec;
  gpus.set_device("cuda");  // one GPU per rank on each host
  EXPECT_TRUE(ValidateJobSpec(gpus).ok()) << ValidateJobSpec(gpus);

  JobSpec bad = spec;
  bad.set_processes(3);
  refused(bad, "processes", "do not spread evenly over 2 hosts");
  bad = spec;
  bad.set_hosts("a,a");
  refused(bad, "hosts", "listed twice");
  bad.set_hosts("a");
  refused(bad, "hosts", "2 to 16");
  bad.set_hosts("a,b;rm -rf /");
  refused(bad, "hosts", "letters, digits");
  bad.set_hosts("a,,b");
  refused(bad, "hosts", "letters, digits");
  bad = spec;
  bad.set_device("mps");
  refused(bad, "device", "cpu (Gloo) or cuda (NCCL)");
  bad = spec;
  bad.set_gpus(2);
  refused(bad, "gpus", "one GPU on its host");
  bad = spec;
  bad.set_backend("slurm");
  refused(bad, "hosts", "not with backend slurm");
  bad = spec;
  bad.set_nodes(2);
  refused(bad, "nodes", "hosts or nodes, not both");
  bad = spec;
  bad.set_init_from("7");
  refused(bad, "init_from", "not with hosts yet");
}

TEST(JobSpecTest, SlurmFieldsAreCheckedAndNeedBackendSlurm) {
  auto refused = [](const JobSpec& spec, const std::string& field) {
    absl::Status status = ValidateJobSpec(spec);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_EQ(status.message().rfind(field + ":", 0), 0u) << status;
  };
  JobSpec spec = Valid();
  spec.set_backend("slurm");
  spec.set_device("cpu");
  spec.set_processes(4);
  spec.set_nodes(2);
  spec.set_partition("debug,gpu");
  spec.set_time_limit("1-00:00:00");
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);

  JobSpec gpus = spec;
  gpus.set_device("cuda");
  refused(gpus, "gpus_per_node");  // cuda needs GPUs allocated
  gpus.set_gpus_per_node(2);
  EXPECT_TRUE(ValidateJobSpec(gpus).ok()) << ValidateJobSpec(gpus);  // 4 ranks, one GPU each
  gpus.set_gpus_per_node(1);  // 4 tasks on 2 nodes with 1 GPU each
  refused(gpus, "processes");

  JobSpec bad = spec;
  bad.set_partition("a;b");
  refused(bad, "partition");
  bad = spec;
  bad.set_partition(std::string(65, 'p'));
  refused(bad, "partition");
  bad = spec;
  bad.set_time_limit("2:00 --wrap=id");
  refused(bad, "time_limit");
  bad = spec;
  bad.set_nodes(5);  // more nodes than tasks
  refused(bad, "nodes");
  bad = spec;
  bad.set_device("mps");
  refused(bad, "device");
  bad = spec;
  bad.set_gpus_per_node(1);  // on the CPU
  refused(bad, "gpus_per_node");
  bad = spec;
  bad.set_gpus(2);
  refused(bad, "gpus");
  bad = spec;
  bad.set_backend("k8s");
  refused(bad, "backend");

  JobSpec local = Valid();
  local.set_device("cpu");
  local.set_nodes(2);  // without Slurm: this traind and a peer (the daemon makes it hosts)
  EXPECT_TRUE(ValidateJobSpec(local).ok()) << ValidateJobSpec(local);
  local.set_nodes(17);
  refused(local, "nodes");
  local = Valid();
  local.set_time_limit("30");  // traind enforces it for its own jobs too
  EXPECT_TRUE(ValidateJobSpec(local).ok()) << ValidateJobSpec(local);
  local.set_time_limit("1h");
  refused(local, "time_limit");
  local = Valid();
  local.set_backend("local");  // the default, by name
  ApplyDefaults(&local);
  EXPECT_EQ(local.backend(), "");
  EXPECT_TRUE(ValidateJobSpec(local).ok());
}

}  // namespace
}  // namespace traind
