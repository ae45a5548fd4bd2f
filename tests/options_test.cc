// Issue 3's models, datasets, options and benchmark jobs through trainctl and a real daemon.
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "tests/daemon_fixture.h"

namespace traind {
namespace {

using trainer::v1::Job;

class OptionsTest : public DaemonTest {
 protected:
  Job SubmitAndWait(const std::vector<std::string>& args) {
    std::vector<std::string> full = {"submit"};
    full.insert(full.end(), args.begin(), args.end());
    Result submit = Trainctl(full);
    EXPECT_EQ(submit.exit_code, 0) << submit.err;
    if (submit.exit_code != 0) return Job();
    const int64_t id = std::stoll(submit.out);
    Result watch = Trainctl({"watch", std::to_string(id)});
    EXPECT_EQ(watch.exit_code, 0) << watch.out << GetJob(id).result().error();
    return GetJob(id);
  }
};

// Issue 17: schedules, label smoothing, clipping and stopping, each through a real job.
TEST_F(OptionsTest, CosineScheduleWithWarmupDrivesTheLearningRate) {
  Job job = SubmitAndWait({"--model",
                           "mlp",
                           "--dataset",
                           "fashion-mnist",
                           "--device",
                           "cpu",
                           "--epochs",
                           "3",
                           "--limit-train",
                           "2000",
                           "--limit-test",
                           "200",
                           "--batch-size",
                           "50",
                           "--log-every",
                           "6",
                           "--lr",
                           "0.002",
                           "--lr-schedule",
                           "cosine",
                           "--warmup-epochs",
                           "1",
                           "--label-smoothing",
                           "0.1",
                           "--clip-grad-norm",
                           "1.0"});
  ASSERT_EQ(job.state(), Job::SUCCEEDED);
  // 36 steps an epoch (1800 training images): warmup over epoch 1, then cosine down to 0.
  std::vector<double> rates;
  std::vector<double> epoch_end_rates;
  for (const auto& e : Events(job.id())) {
    if (e.has_step()) rates.push_back(e.step().learning_rate());
    if (e.has_epoch_summary()) epoch_end_rates.push_back(e.epoch_summary().learning_rate());
  }
  ASSERT_GE(rates.size(), 6u);
  EXPECT_NEAR(rates.front(), 0.002 / 36, 1e-9);  // the first step of the warmup
  ASSERT_EQ(epoch_end_rates.size(), 3u);
  EXPECT_NEAR(epoch_end_rates[0], 0.002, 1e-9);  // warmup done
  EXPECT_LT(epoch_end_rates[1], 0.002);
  EXPECT_NEAR(epoch_end_rates[2], 0.0, 1e-9);  // annealed to zero
  EXPECT_GT(job.result().test_accuracy(), 0.3);
}

TEST_F(OptionsTest, StopAtAccuracyEndsEarlyAndSaysWhen) {
  Job job = SubmitAndWait({"--model", "mlp", "--dataset", "fashion-mnist", "--device", "cpu",
                           "--epochs", "30", "--limit-train", "2000", "--limit-test", "200",
                           "--stop-at-accuracy", "0.3"});
  ASSERT_EQ(job.state(), Job::SUCCEEDED);
  ASSERT_TRUE(job.result().has_stopped());
  EXPECT_LT(job.result().stopped().epoch(), 30);
  EXPECT_NE(job.result().stopped().reason().find("reached validation accuracy"), std::string::npos)
      << job.result().stopped().reason();
  EXPECT_EQ(job.result().epoch_seconds_no_eval_size(), job.result().stopped().epoch());
  // The best weights are kept, and the final ones from the epoch it stopped at.
  bool best = false;
  for (const auto& a : job.result().artifacts()) best |= a.name() == "best";
  EXPECT_TRUE(best);
  Result show = Trainctl({"show", std::to_string(job.id())});
  EXPECT_NE(show.out.find("stopped"), std::string::npos) << show.out;
}

TEST_F(OptionsTest, EarlyStopPatienceStopsWhenNothingImproves) {
  // A learning rate too small to change anything: no evaluation after the first is better.
  Job job = SubmitAndWait({"--model", "mlp", "--dataset", "fashion-mnist", "--device", "cpu",
                           "--epochs", "20", "--limit-train", "1000", "--limit-test", "100", "--lr",
                           "1e-12", "--early-stop-patience", "2"});
  ASSERT_EQ(job.state(), Job::SUCCEEDED);
  ASSERT_TRUE(job.result().has_stopped());
  EXPECT_EQ(job.result().stopped().epoch(), 3);
  EXPECT_NE(job.result().stopped().reason().find("no better validation score in 2 evaluations"),
            std::string::npos)
      << job.result().stopped().reason();
}

TEST_F(OptionsTest, ScheduleAndStoppingValuesAreCheckedAtSubmit) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"--lr-schedule", "linear"}, "lr_schedule: unknown value 'linear'"},
      {{"--warmup-epochs", "5", "--epochs", "2"}, "warmup_epochs: at most epochs (2)"},
      {{"--label-smoothing", "1"}, "label_smoothing: must be 0 or more and less than 1"},
      {{"--stop-at-accuracy", "89"}, "stop_at_accuracy: must be 0 to 1, got 89 (a fraction"},
      {{"--lr-step-gamma", "0.5"}, "only with lr_schedule step"},
      {{"--clip-grad-norm", "-1"}, "clip_grad_norm: must be 0 to 1000000, got -1"},
  };
  for (const auto& [flags, message] : refused) {
    std::vector<std::string> args = {"submit", "--model", "mlp", "--dataset", "fake"};
    args.insert(args.end(), flags.begin(), flags.end());
    Result r = Trainctl(args);
    EXPECT_EQ(r.exit_code, 2) << flags.front();
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
}

TEST_F(OptionsTest, Vgg16OnFake32px) {
  Job job = SubmitAndWait({"--model", "vgg16", "--dataset", "fake", "--image-size", "32",
                           "--num-samples", "80", "--batch-size", "16", "--device", "cpu"});
  EXPECT_EQ(job.state(), Job::SUCCEEDED);
  EXPECT_EQ(job.spec().channels(), 3);
}

// bf16 on a CPU without bf16 arithmetic takes LibTorch's slow convolution backward (about a minute
// a step of 16 images for ResNet-18 on the 2-core VM, alone): a few small batches are what this
// test needs.
TEST_F(OptionsTest, ResNet18OnFakeWithCifarStemAugmentationAndBf16) {
  Job job = SubmitAndWait({"--model", "resnet18", "--cifar-stem", "--dataset", "fake",
                           "--image-size", "32", "--num-samples", "12", "--batch-size", "4",
                           "--random-crop", "4", "--hflip", "--amp", "bf16", "--device", "cpu"});
  EXPECT_EQ(job.state(), Job::SUCCEEDED);
  EXPECT_TRUE(job.spec().horizontal_flip());
  EXPECT_EQ(job.spec().amp(), "bf16");
}

TEST_F(OptionsTest, SgdMomentumAccumulateThreadsEvalEveryAndCheckpoints) {
  Job job = SubmitAndWait({"--model",
                           "lenet5",
                           "--dataset",
                           "fashion-mnist",
                           "--optimizer",
                           "sgd",
                           "--momentum",
                           "0.9",
                           "--accumulate",
                           "4",
                           "--threads",
                           "2",
                           "--epochs",
                           "3",
                           "--eval-every",
                           "2",
                           "--checkpoint-every",
                           "1",
                           "--limit-train",
                           "1000",
                           "--limit-test",
                           "200",
                           "--device",
                           "cpu"});
  ASSERT_EQ(job.state(), Job::SUCCEEDED);
  EXPECT_EQ(job.result().epoch_seconds_no_eval_size(), 3);
  int evaluated = 0;
  for (const auto& e : Events(job.id())) {
    if (e.has_epoch_summary() && e.epoch_summary().evaluated()) ++evaluated;
  }
  EXPECT_EQ(evaluated, 2);  // epoch 2 and the last
  EXPECT_TRUE(
      std::filesystem::exists(state_dir_ + "/jobs/" + std::to_string(job.id()) + "/checkpoint.pt"));
  Result logs = Trainctl({"logs", std::to_string(job.id())});
  EXPECT_NE(logs.out.find("Checkpoint after epoch 3"), std::string::npos) << logs.out;
}

TEST_F(OptionsTest, ProfileStepsKeepsTopOperatorsAndATrace) {
  Job job = SubmitAndWait({"--model", "lenet5", "--dataset", "fashion-mnist", "--profile-steps",
                           "3", "--limit-train", "1000", "--limit-test", "100", "--batch-size",
                           "32", "--device", "cpu"});
  ASSERT_EQ(job.state(), Job::SUCCEEDED);
  ASSERT_GT(job.result().top_operators_size(), 3);
  EXPECT_GT(job.result().top_operators(0).self_seconds(), 0);
  EXPECT_GE(job.result().top_operators(0).self_seconds(),
            job.result().top_operators(1).self_seconds());
  bool saw_convolution = false;
  for (const auto& op : job.result().top_operators()) {
    saw_convolution |= op.name().find("conv") != std::string::npos;
  }
  EXPECT_TRUE(saw_convolution);
  EXPECT_EQ(job.result().trace_path(),
            state_dir_ + "/jobs/" + std::to_string(job.id()) + "/trace.json");
  std::ifstream trace(job.result().trace_path());
  std::string text((std::istreambuf_iterator<char>(trace)), std::istreambuf_iterator<char>());
  // A Chrome trace: traind's own (legacy profiler) or Kineto's (CUDA builds), both JSON objects
  // with the operators among their traceEvents.
  const size_t first = text.find_first_not_of(" \t\r\n");
  ASSERT_NE(first, std::string::npos) << "an empty trace";
  EXPECT_EQ(text[first], '{');
  EXPECT_NE(text.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(text.find("conv"), std::string::npos);
  Result show = Trainctl({"show", std::to_string(job.id())});
  EXPECT_NE(show.out.find("top operators by self time"), std::string::npos) << show.out;
}

// On a GPU the profile also times the device's kernels, inside a CUDA graph's replays too (a
// graph job's steps are one launch each on the host side).
TEST_F(OptionsTest, ProfileStepsOnCudaTimesTheKernelsInsideTheGraph) {
  Result devices = Trainctl({"devices", "-o", "json"});
  if (devices.out.find("\"cuda:0\"") == std::string::npos) GTEST_SKIP() << "no CUDA device";
  Job job = SubmitAndWait({"--model", "lenet5", "--dataset", "fashion-mnist", "--device", "cuda",
                           "--cuda-graph", "--profile-steps", "4", "--limit-train", "2000",
                           "--limit-test", "100", "--batch-size", "64"});
  ASSERT_EQ(job.state(), Job::SUCCEEDED);
  EXPECT_EQ(job.result().profile_steps(), 4);
  ASSERT_GT(job.result().top_kernels_size(), 3);
  EXPECT_GT(job.result().profile_kernel_seconds(), 0);
  double listed = 0;
  int64_t launches = 0;
  for (const auto& k : job.result().top_kernels()) {
    listed += k.self_seconds();
    EXPECT_GT(k.calls(), 0) << k.name();
    launches += k.calls();
  }
  EXPECT_LE(listed, job.result().profile_kernel_seconds() * 1.000001);
  // Outside the graph a step launches about six kernels (the batch's gather and its copies into
  // the graph's buffers, the loss sum); the graph's dozens (convolutions, pooling, the loss,
  // their gradients, Adam) count only if the profiler sees inside its replays.
  EXPECT_GT(launches, 10 * 4) << "kernels inside the graph's replays are missing";
  Result show = Trainctl({"show", std::to_string(job.id())});
  EXPECT_NE(show.out.find("of device time per step over 4 steps"), std::string::npos) << show.out;
}

TEST_F(OptionsTest, BatchSizeAutoChoosesAndReports) {
  Job job = SubmitAndWait({"--model", "mlp", "--dataset", "fashion-mnist", "--batch-size", "auto",
                           "--limit-train", "2000", "--limit-test", "100", "--device", "cpu"});
  ASSERT_EQ(job.state(), Job::SUCCEEDED);
  EXPECT_GE(job.result().batch_size(), 32);
  EXPECT_LE(job.result().batch_size(), 1800 / 4);
  Result logs = Trainctl({"logs", std::to_string(job.id())});
  EXPECT_NE(logs.out.find("batch-size auto: " + std::to_string(job.result().batch_size())),
            std::string::npos)
      << logs.out;
}

TEST_F(OptionsTest, BenchMatmulPrintsTheResult) {
  Result bench = Trainctl({"bench", "matmul", "--size", "256", "--dtype", "fp32", "--device", "cpu",
                           "--output", "json"});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(bench.out, &job).ok()) << bench.out;
  EXPECT_EQ(job.result().bench().kind(), "matmul");
  EXPECT_GT(job.result().bench().seconds(), 0);
  EXPECT_GT(job.result().bench().tflops(), 0);
  Result table = Trainctl({"bench", "matmul", "--size", "128", "--device", "cpu"});
  EXPECT_NE(table.out.find("matmul 128x128 fp32 on cpu"), std::string::npos) << table.out;
}

// A CPU benchmark runs alone and measures the whole machine, as torch.mm would (not the cores a
// training job leaves the daemon): its log and its result say how many threads it took.
TEST_F(OptionsTest, ACpuMatmulBenchmarkTakesTheWholeMachineAndSaysSo) {
  Result bench = Trainctl({"bench", "matmul", "--size", "256", "--device", "cpu", "-o", "json"});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(bench.out, &job).ok()) << bench.out;
  const int threads = job.result().bench().threads();
  EXPECT_GE(threads, 1);
  Result logs = Trainctl({"logs", std::to_string(job.id())});
  const std::string said = absl::StrCat("CPU: ", threads, " intra-op thread");
  const size_t line = logs.out.find(said);
  ASSERT_NE(line, std::string::npos) << logs.out;
  EXPECT_NE(logs.out.find("the whole machine (a benchmark that runs alone)", line),
            std::string::npos)
      << logs.out;
  // Its table line names them too.
  Result table = Trainctl({"bench", "matmul", "--size", "128", "--device", "cpu"});
  EXPECT_NE(table.out.find(" timed, "), std::string::npos) << table.out;  // "(10 timed, 2 threads)"
  EXPECT_NE(table.out.find(" thread"), std::string::npos) << table.out;
  // `list` names what a benchmark measures where a training job shows its model and data.
  Result list = Trainctl({"list"});
  EXPECT_NE(list.out.find("matmul      n=256 fp32"), std::string::npos) << list.out;
}

TEST_F(OptionsTest, ABadListLimitIsOneShortLine) {
  Result list = Trainctl({"list", "--limit", "0"});
  EXPECT_EQ(list.exit_code, 2);
  EXPECT_NE(list.err.find("must be an integer of at least 1, got 0"), std::string::npos)
      << list.err;
  EXPECT_LT(list.err.size(), 200u) << list.err;  // not CLI11's 309-digit range
}

TEST_F(OptionsTest, BenchTrainReportsThroughput) {
  Result bench = Trainctl({"bench", "train", "--model", "mlp", "--dataset", "fake", "--num-samples",
                           "400", "--image-size", "28", "--channels", "1", "--batch-size", "32",
                           "--steps", "10", "--device", "cpu"});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_NE(bench.out.find("steps/s"), std::string::npos) << bench.out;
}

TEST_F(OptionsTest, UnsupportedPairsAreRefusedWithTheSupportedOnes) {
  Result amp = Trainctl({"submit", "--model", "mlp", "--dataset", "fashion-mnist", "--device",
                         "cpu", "--amp", "fp16"});
  EXPECT_EQ(amp.exit_code, 2);
  EXPECT_NE(amp.err.find("amp: fp16 is not supported on cpu; supported: bf16"), std::string::npos)
      << amp.err;
  Result dtype = Trainctl({"bench", "matmul", "--dtype", "tf32", "--device", "cpu"});
  EXPECT_EQ(dtype.exit_code, 2);
  EXPECT_NE(dtype.err.find("benchmark.dtype: tf32 is not supported on cpu"), std::string::npos)
      << dtype.err;
  Result batch = Trainctl({"submit", "--model", "mlp", "--dataset", "fake", "--batch-size", "big"});
  EXPECT_EQ(batch.exit_code, 2);
  EXPECT_NE(batch.err.find("expected 'auto' or an integer"), std::string::npos);
  Result tf32 = Trainctl({"submit", "--model", "mlp", "--dataset", "fake", "--tf32", "yes"});
  EXPECT_EQ(tf32.exit_code, 2);
  EXPECT_NE(tf32.err.find("tf32: unknown value 'yes'; allowed: off, on"), std::string::npos)
      << tf32.err;
  Result tf32_cpu = Trainctl(
      {"submit", "--model", "mlp", "--dataset", "fake", "--device", "cpu", "--tf32", "on"});
  EXPECT_EQ(tf32_cpu.exit_code, 2);
  EXPECT_NE(tf32_cpu.err.find("tf32: on needs a cuda device, not cpu"), std::string::npos)
      << tf32_cpu.err;
  Result cifar = Trainctl({"submit", "--model", "vgg16", "--dataset", "cifar10"});
  EXPECT_EQ(cifar.exit_code, 2);
  EXPECT_NE(cifar.err.find("data_dir: required for dataset 'cifar10'"), std::string::npos);
}

// Runs only where the daemon found a CUDA device (the GPU host): a job on cuda:0 reports the
// caching allocator's memory, and its accuracy computed on the CPU is sane.
TEST_F(OptionsTest, CudaJobReportsAllocatorMemory) {
  Result devices = Trainctl({"devices", "-o", "json"});
  if (devices.out.find("\"cuda:0\"") == std::string::npos) GTEST_SKIP() << "no CUDA device";
  Job job = SubmitAndWait({"--model", "lenet5", "--dataset", "fashion-mnist", "--device", "cuda",
                           "--device-resident", "--limit-train", "5000", "--limit-test", "1000"});
  ASSERT_EQ(job.state(), Job::SUCCEEDED);
  EXPECT_EQ(job.spec().device(), "cuda:0");
  EXPECT_GT(job.result().peak_current_allocated_bytes(), 0);
  EXPECT_GE(job.result().peak_driver_allocated_bytes(),
            job.result().peak_current_allocated_bytes());
  EXPECT_GT(job.result().test_accuracy(), 0.5);
  // The captured step learns as the eager one does (same data, same seed, same optimizer).
  Job graph = SubmitAndWait({"--model", "lenet5", "--dataset", "fashion-mnist", "--device", "cuda",
                             "--device-resident", "--cuda-graph", "--limit-train", "5000",
                             "--limit-test", "1000"});
  ASSERT_EQ(graph.state(), Job::SUCCEEDED);
  EXPECT_NEAR(graph.result().test_accuracy(), job.result().test_accuracy(), 0.03);
  Job amp = SubmitAndWait({"--model", "resnet18", "--dataset", "fake", "--image-size", "64",
                           "--num-samples", "128", "--batch-size", "32", "--device", "cuda",
                           "--amp", "fp16"});
  EXPECT_EQ(amp.state(), Job::SUCCEEDED);
  // --tf32 off: strict fp32, and the job's log says so.
  Job strict = SubmitAndWait({"--model", "mlp", "--dataset", "fake", "--num-samples", "256",
                              "--device", "cuda", "--tf32", "off"});
  EXPECT_EQ(strict.state(), Job::SUCCEEDED);
  Result logs = Trainctl({"logs", std::to_string(strict.id())});
  EXPECT_NE(logs.out.find("TF32 off for convolutions, off for matrix products"), std::string::npos)
      << logs.out;
  Result bench = Trainctl(
      {"bench", "matmul", "--size", "2048", "--dtype", "tf32", "--device", "cuda", "-o", "json"});
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
}

}  // namespace
}  // namespace traind
