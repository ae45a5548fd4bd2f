#include "engine/training_job.h"

#include <fcntl.h>
#include <signal.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/job_spec.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "data/dataset.h"
#include "engine/artifacts.h"
#include "engine/batch_size_search.h"
#include "engine/benchmarks.h"
#include "engine/blas_threads.h"
#include "engine/cpu_threads.h"
#include "engine/cuda_graph_step.h"
#include "engine/data_parallel.h"
#include "engine/device.h"
#include "engine/durable_file.h"
#include "engine/evaluate.h"
#include "engine/fast_paths.h"
#include "engine/loss.h"
#include "engine/lr_schedule.h"
#include "engine/optimizer_factory.h"
#include "engine/shard_threads.h"
#include "engine/step_profiler.h"
#include "engine/train_step.h"
#include "models/batch_norm.h"
#include "models/model_factory.h"
#include "models/scripted_model.h"

namespace traind {

namespace {

using Clock = std::chrono::steady_clock;
using trainer::v1::JobEvent;
using trainer::v1::JobSpec;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Stamp(JobEvent* event) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  event->mutable_time()->set_seconds(nanos / 1000000000);
  event->mutable_time()->set_nanos(static_cast<int32_t>(nanos % 1000000000));
}

// JobSpec.debug: a real crash of this process, for the daemon's fault tests.
void InjectFault(const std::string& kind) {
  std::fprintf(stderr, "traind-worker: injecting fault '%s'\n", kind.c_str());
  std::fflush(stderr);
  if (kind == "abort") std::abort();
  if (kind == "exit") std::_Exit(42);
  if (kind == "hang") {
    while (true) pause();
  }
  raise(SIGSEGV);
}

// Where the checkpoint lies, for the job's log: said without the daemon's paths (a remote owner
// reads the log and learns nothing of the daemon's file system from it).
constexpr char kInJobDirectory[] = ": checkpoint.pt in the job's directory";

// cuDNN's autotuning times every algorithm for each new convolution shape before it first runs
// it. Measured on the H200 (docs/benchmarks.md, session 14): 1-7.6 s before the first step of
// VGG16 and ResNet-18 (the CUDA graph's capture: 0.14-0.23 s without), for steady-state epochs
// only 0.5-2.3% shorter (0.1-0.15 ms a step), so it pays back after about 12,000-50,000 steps.
// Jobs planned for at least kAutotuneMinSteps steps tune; shorter ones take cuDNN's heuristics.
// TRAIND_CUDNN_AUTOTUNE=1 or 0 in the worker's environment decides instead (benchmarks).
constexpr int64_t kAutotuneMinSteps = 50000;

// After ConfigureDevice (which turns autotuning on for CUDA): turns it off for a short job.
// Returns what the settings line should say instead of "cuDNN autotuning on" ("": unchanged).
std::string ChooseAutotuning(int64_t planned_steps) {
  if (!at::globalContext().benchmarkCuDNN()) return "";  // not CUDA, or --deterministic
  const char* forced = std::getenv("TRAIND_CUDNN_AUTOTUNE");
  if (forced != nullptr && std::string(forced) == "1") return "";
  const bool off =
      forced != nullptr ? std::string(forced) == "0" : planned_steps < kAutotuneMinSteps;
  if (!off) return "";
  at::globalContext().setBenchmarkCuDNN(false);
  return forced != nullptr ? "cuDNN autotuning off (TRAIND_CUDNN_AUTOTUNE=0)"
                           : absl::StrCat("cuDNN autotuning off (", planned_steps,
                                          " steps planned: tuning pays back after about ",
                                          kAutotuneMinSteps, ")");
}

// Why a model's batches cannot be trained in shards at once (engine/train_step.h), "" if they can.
// Dropout is found by its modules' names: a model that calls torch::dropout (or another random
// operator) in its forward is not recognised; the zoo's models do not.
std::string ShardingObstacle(torch::nn::Module& model) {
  if (dynamic_cast<const ScriptedModelImpl*>(&model) != nullptr) {
    return "a TorchScript model (its state and randomness are not inspected)";
  }
  if (!model.buffers().empty()) {
    return "the model has buffers (batch norm's running statistics), which shards would update "
           "at once";
  }
  for (const std::shared_ptr<torch::nn::Module>& module : model.modules()) {
    if (absl::StrContains(module->name(), "Dropout")) {
      return "the model has dropout, whose random draws the shards would take in no fixed order";
    }
  }
  return "";
}

// The jobs traind's CPU lane runs at once (`traind --slots cpu=N`), which share its cores.
int CpuSlots() {
  const char* slots = std::getenv("TRAIND_CPU_SLOTS");
  const int n = slots == nullptr ? 1 : std::atoi(slots);
  return std::max(1, n);
}

// Every parameter group's learning rate (the schedule's value for this step).
void SetLearningRate(torch::optim::Optimizer& optimizer, double learning_rate) {
  for (torch::optim::OptimizerParamGroup& group : optimizer.param_groups()) {
    group.options().set_lr(learning_rate);
  }
}

// Data parallel: how long a collective (or the rendezvous) may wait for a rank before failing,
// and how often the ranks agree on stopping and checkpointing.
constexpr absl::Duration kCollectiveTimeout = absl::Minutes(2);
constexpr int64_t kCoordinateEvery = 8;

// Where a training run stands; what a checkpoint records besides the model and optimizer.
struct Progress {
  int epoch = 1;           // the epoch to run next (or to continue)
  int64_t batch = 0;       // batches of `epoch` already done
  double loss_sum = 0;     // their summed loss
  double epoch_seconds = 0;  // training time they took
  int64_t global_step = 0;
  // The best validation result so far: accuracy (cross-entropy) or minus the loss (mse).
  double best_validation = -1e300;
  int best_epoch = 0;
  double train_seconds = 0;  // training time before this run (a resumed job counts on from it)
  // Set when stop_at_accuracy or early_stop_patience ended training: a resumed job goes straight
  // to its final evaluation and still says why it stopped.
  int stopped_epoch = 0;
  std::string stopped_reason;
};

class JobRun {
 public:
  // `phase` says what the job is doing, for an error caught outside (out of memory).
  JobRun(const trainer::v1::WorkerRequest& request, const EventSink& emit,
         const std::atomic<bool>& stop, const std::atomic<bool>* suspend, torch::Device device,
         std::optional<RankPlacement> placement, const char** phase)
      : phase_(phase), spec_(request.spec()), job_dir_(request.job_dir()), model_path_(request.model_path()),
        data_path_(request.data_path()),
        data_roots_(request.data_roots().begin(), request.data_roots().end()),
        init_path_(request.init_path()), loss_(LossKindFromName(request.spec().loss())),
        emit_(emit), stop_(stop),
        suspend_(suspend), checkpoint_interval_(request.checkpoint_interval_seconds()),
        exclusive_(request.exclusive()),
        device_(device),
        placement_(std::move(placement)) {}

  absl::Status Run();

 private:
  // Where a job's start-up went (seconds), logged once training begins: each phase in order.
  std::vector<std::pair<std::string, double>> startup_;
  Clock::time_point began_ = Clock::now();
  void Took(const std::string& phase, Clock::time_point since) {
    startup_.emplace_back(phase, SecondsSince(since));
  }

  absl::Status Train(Dataset& data, int64_t batch_size, const std::string& settings);
  // The model for `data`, on the device, with init_from's weights when the spec names some.
  absl::StatusOr<torch::nn::AnyModule> BuildModel(const Dataset& data);
  // evaluate_only: init_from's weights over the test split once.
  absl::Status EvaluateOnly(Dataset& data);
  // Writes <job_dir>/NAME.pt and emits its Artifact event.
  absl::Status KeepArtifact(torch::nn::AnyModule& model, const std::string& name, int epoch,
                            const Evaluation* validation);
  absl::Status SaveCheckpoint(torch::nn::AnyModule& model, torch::optim::Optimizer& optimizer,
                              TrainStep& step, const Progress& progress, int64_t batches,
                              const std::string& why);
  // Restores model, optimizer, RNG states and progress from the job's checkpoint, if it has one.
  absl::StatusOr<Progress> LoadCheckpoint(torch::nn::AnyModule& model,
                                          torch::optim::Optimizer& optimizer, TrainStep& step);
  // A NaN or infinite loss ruins the weights for good: fail now, saying when, rather than train
  // on and report a "succeeded" job with NaN loss (unless the spec allows it).
  absl::Status CheckLossIsFinite(double loss, int epoch, int64_t batch,
                                 double learning_rate) const {
    if (std::isfinite(loss) || spec_.allow_nonfinite_loss()) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrFormat(
        "loss became %s at epoch %d, batch %d (learning rate %g): training diverged. Lower the "
        "learning rate, or set allow_nonfinite_loss (--allow-nonfinite-loss) to train on",
        std::isnan(loss) ? "NaN" : "infinite", epoch, batch, learning_rate));
  }
  // In a data-parallel job rank 0 speaks for all; the other ranks report only their errors
  // (worker/main.cc writes those itself).
  void Emit(JobEvent event) {
    if (dp_ != nullptr && dp_->rank() != 0) return;
    Stamp(&event);
    emit_(std::move(event));
  }
  // Data parallel: the ranks' flags OR-ed (one collective); alone: as they are.
  std::vector<bool> AnyRank(std::vector<bool> flags) {
    return dp_ != nullptr ? dp_->Any(flags) : flags;
  }
  double MeanOverRanks(double value) { return dp_ != nullptr ? dp_->Mean(value) : value; }
  // Collective: every rank's memory into `metrics` (rank 0 reports them).
  void AddRankMemory(const MemoryReading& mine, trainer::v1::StepMetrics* metrics) {
    if (dp_ == nullptr) return;
    const int64_t packed[3] = {mine.current_allocated, mine.driver_allocated,
                               device_.has_index() ? device_.index() : -1};
    const std::vector<std::string> all =
        dp_->AllGather(std::string(reinterpret_cast<const char*>(packed), sizeof(packed)));
    for (size_t r = 0; r < all.size(); ++r) {
      int64_t theirs[3] = {0, 0, -1};
      std::memcpy(theirs, all[r].data(), std::min(all[r].size(), sizeof(theirs)));
      trainer::v1::RankMemory* rank = metrics->add_ranks();
      rank->set_rank(static_cast<int32_t>(r));
      rank->set_device(theirs[2] >= 0
                           ? absl::StrCat(c10::DeviceTypeName(device_.type(), true), ":", theirs[2])
                           : c10::DeviceTypeName(device_.type(), true));
      rank->set_current_allocated_bytes(theirs[0]);
      rank->set_driver_allocated_bytes(theirs[1]);
    }
  }
  // Collective: each rank's digest of its weights, logged by rank 0 (they must all be equal).
  absl::Status CheckRanksAgree(torch::nn::AnyModule& model);
  void Log(const std::string& text) {
    JobEvent event;
    event.mutable_log()->set_text(text);
    Emit(std::move(event));
  }
  void EmitBench(const trainer::v1::BenchResult& result) {
    JobEvent event;
    *event.mutable_bench() = result;
    Emit(std::move(event));
  }
  void TrackPeaks(const MemoryReading& m) {
    peak_current_ = std::max({peak_current_, m.current_allocated, m.peak_current_allocated});
    peak_driver_ = std::max({peak_driver_, m.driver_allocated, m.peak_driver_allocated});
  }

  const char** const phase_;
  // The request's spec with the fast paths resolved (ChooseFastPaths) once the data is loaded.
  JobSpec spec_;
  const std::string job_dir_;
  const std::string model_path_;  // torchscript jobs: the uploaded module
  const std::string data_path_;   // tensors, csv: the data file
  // The data is opened beneath these where it is read (WorkerRequest.data_roots).
  const std::vector<std::string> data_roots_;
  const std::string init_path_;   // init_from: the weights to start from (or to evaluate)
  const LossKind loss_;
  const EventSink& emit_;
  const std::atomic<bool>& stop_;
  const std::atomic<bool>* const suspend_;
  const double checkpoint_interval_;
  const bool exclusive_;  // the job runs alone (WorkerRequest.exclusive)
  const torch::Device device_;
  const std::optional<RankPlacement> placement_;  // set: this worker is one rank of several
  std::unique_ptr<DataParallel> dp_;              // joined in Run when placement_ is set
  CpuFacts cpu_facts_;        // read in Run for CPU jobs and ranks
  BatchShards batch_shards_;  // a CPU job's, chosen in Run; Train checks the model can take them
  int64_t peak_current_ = 0;
  int64_t peak_driver_ = 0;
  bool cuda_graph_by_default_ = false;  // a capture failure falls back to the eager step
};

absl::Status JobRun::Run() {
  torch::manual_seed(spec_.seed());
  // CPU jobs and ranks read the machine once: threads, shards and the BLAS's threads follow.
  if (device_.is_cpu() || placement_.has_value()) cpu_facts_ = ReadCpuFacts();
  const bool matmul = spec_.has_benchmark() && spec_.benchmark().kind() == "matmul";
  if (spec_.has_threads()) {
    torch::set_num_threads(spec_.threads());
  } else if (matmul && exclusive_ && device_.is_cpu() && !placement_.has_value()) {
    const CpuThreads chosen = WholeMachineThreads(cpu_facts_, "a benchmark that runs alone");
    torch::set_num_threads(chosen.threads);
    Log("CPU: " + chosen.explanation);
  } else if (placement_.has_value()) {
    // Ranks share the machine's cores (torchrun's OMP_NUM_THREADS gives each 1); each taking
    // them all would oversubscribe them.
    const CpuThreads chosen =
        ChooseCpuThreads(cpu_facts_, placement_->world_size, "ranks of this job");
    torch::set_num_threads(chosen.threads);
    if (device_.is_cpu()) Log("CPU: " + chosen.explanation);
  } else if (device_.is_cpu()) {
    const int slots = CpuSlots();
    const std::string sharers = slots == 1 ? "CPU job at a time" : "CPU jobs at a time";
    const CpuThreads chosen = ChooseCpuThreads(cpu_facts_, slots, sharers);
    torch::set_num_threads(chosen.threads);
    Log("CPU: " + chosen.explanation);
    batch_shards_ = ChooseBatchShards(cpu_facts_, slots, sharers);
  }
  if (device_.is_cpu()) {
    // The BLAS's own thread pool follows the job's threads (engine/blas_threads.h says why).
    const int blas_threads = ChooseBlasThreads(cpu_facts_, torch::get_num_threads());
    const std::string blas = DescribeBlasThreads(SetBlasThreads(blas_threads));
    if (!blas.empty()) Log("BLAS: " + blas);
  }
  if (matmul) {
    ASSIGN_OR_RETURN(trainer::v1::BenchResult result,
                     RunMatmulBenchmark(spec_.benchmark(), device_, stop_));
    if (device_.is_cpu()) result.set_threads(torch::get_num_threads());
    EmitBench(result);
    return absl::OkStatus();
  }

  auto phase_start = Clock::now();
  if (!device_.is_cpu()) {
    PrepareDevice(device_);  // timed apart: a warm worker has done it already
    Took(device_.str() + " context", phase_start);
  }
  std::string settings = ConfigureDevice(device_, spec_.tf32());
  if (spec_.deterministic()) {
    // After ConfigureDevice, which turns cuDNN autotuning on: deterministic turns it off.
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
    at::globalContext().setDeterministicCuDNN(true);
    at::globalContext().setBenchmarkCuDNN(false);
    Log("Deterministic: LibTorch's deterministic algorithms, cuDNN autotuning off, seeded "
        "generators");
  }
  if (placement_.has_value()) {
    if (spec_.has_benchmark() || spec_.batch_size_auto() || spec_.cuda_graph() ||
        spec_.evaluate_only()) {
      return absl::InvalidArgumentError(
          "processes: data-parallel jobs train; benchmarks, --batch-size auto, --cuda-graph and "
          "evaluate_only run in one process");
    }
    *phase_ = "joining the other ranks";
    ASSIGN_OR_RETURN(dp_, DataParallel::Join(*placement_, device_, kCollectiveTimeout));
  }
  *phase_ = "loading the dataset";
  phase_start = Clock::now();
  const int64_t image_size = ImageSizeFor(spec_);
  ASSIGN_OR_RETURN(Dataset data, ReadDataset(spec_, image_size, data_path_, data_roots_));
  Took("dataset", phase_start);
  {
    FastPathFacts facts;
    facts.cuda = device_.is_cuda();
    facts.data_parallel = placement_.has_value();
    facts.dataset_bytes = PreparedBytes(data, spec_, image_size);
    facts.free_device_bytes = facts.cuda ? AvailableMemory(device_) : 0;
    facts.graphs_built = CudaGraphTrainStep::Available();
    const FastPaths fast = ChooseFastPaths(spec_, facts);
    cuda_graph_by_default_ = fast.cuda_graph && !spec_.has_cuda_graph();
    spec_.set_device_resident(fast.device_resident);
    spec_.set_cuda_graph(fast.cuda_graph);
    if (!fast.explanation.empty()) Log(fast.explanation);
  }
  // A resident dataset travels as the files' bytes and becomes floats on the device: a quarter of
  // the copy, and the GPU converts Fashion-MNIST in milliseconds where the CPU took 0.2-0.3 s.
  const bool resident = spec_.device_resident() && !device_.is_cpu();
  *phase_ = resident ? "preparing the dataset on the device (--device-resident)"
                     : "preparing the dataset";
  phase_start = Clock::now();
  PrepareImages(data, spec_, image_size, resident ? device_ : torch::Device(torch::kCPU));
  if (resident) Synchronize(device_);
  Took(resident ? "images on " + device_.str() : "images", phase_start);
  int64_t batch_size = spec_.batch_size();
  *phase_ = "choosing the batch size";
  if (spec_.batch_size_auto()) {
    const ModelInput input{data.channels, data.height, data.width, data.num_classes};
    ASSIGN_OR_RETURN(BatchSizeChoice choice,
                     ChooseBatchSize(spec_, input, {data.train.inputs[0], data.train.labels[0]},
                                     model_path_, device_, data.train.size(), stop_));
    batch_size = choice.batch_size;
    Log(choice.explanation);
    torch::manual_seed(spec_.seed());  // the search must not change the model's initialisation
  }
  if (spec_.evaluate_only()) return EvaluateOnly(data);
  return Train(data, batch_size, settings);
}

absl::StatusOr<torch::nn::AnyModule> JobRun::BuildModel(const Dataset& data) {
  const ModelInput input{data.channels, data.height, data.width, data.num_classes};
  ASSIGN_OR_RETURN(torch::nn::AnyModule model, CreateModel(spec_, input, model_path_));
  if (const auto* scripted = dynamic_cast<const ScriptedModelImpl*>(model.ptr().get())) {
    Log(absl::StrCat("Model: TorchScript ", scripted->Describe()));
  }
  PlaceModel(model, spec_, device_);
  if (!init_path_.empty()) {
    ASSIGN_OR_RETURN(int tensors, LoadWeights(model, init_path_));
    ASSIGN_OR_RETURN(InitFrom init, ParseInitFrom(spec_.init_from()));
    Log(absl::StrCat("Weights from ", init.Describe(), " (", tensors, " tensors)"));
  }
  RETURN_IF_ERROR(
      CheckModelOutput(model, data.train, device_, spec_.amp(), loss_, data.num_classes));
  return model;
}

absl::Status JobRun::EvaluateOnly(Dataset& data) {
  const auto start = Clock::now();
  ASSIGN_OR_RETURN(torch::nn::AnyModule model, BuildModel(data));
  *phase_ = "evaluating";
  const Evaluation test = Evaluate(model, data.test, device_, spec_.amp(), spec_.batch_size(),
                                   loss_, data.num_classes, /*with_confusion=*/true);
  ASSIGN_OR_RETURN(InitFrom init, ParseInitFrom(spec_.init_from()));
  JobEvent event;
  trainer::v1::Evaluation* evaluation = event.mutable_evaluation();
  evaluation->set_accuracy(test.accuracy);
  evaluation->set_loss(test.loss);
  evaluation->set_samples(data.test.size());
  evaluation->set_weights(init.Describe());
  if (test.confusion.defined()) {
    const int64_t classes = test.confusion.size(0);
    evaluation->set_classes(static_cast<int32_t>(classes));
    const torch::Tensor confusion = test.confusion.contiguous();
    const int64_t* counts = confusion.data_ptr<int64_t>();
    for (int64_t i = 0; i < classes * classes; ++i) evaluation->add_confusion(counts[i]);
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t samples = confusion[c].sum().item<int64_t>();
      evaluation->add_class_samples(samples);
      evaluation->add_class_accuracy(samples == 0 ? 0.0 : static_cast<double>(counts[c * classes + c]) / samples);
    }
  }
  Emit(std::move(event));
  JobEvent final_event;
  auto* result = final_event.mutable_final_result();
  result->set_test_accuracy(test.accuracy);
  result->set_test_loss(test.loss);
  result->set_total_seconds(SecondsSince(start));
  result->set_batch_size(spec_.batch_size());
  TrackPeaks(ReadMemory(device_));
  result->set_peak_current_allocated_bytes(peak_current_);
  result->set_peak_driver_allocated_bytes(peak_driver_);
  Emit(std::move(final_event));
  return absl::OkStatus();
}

absl::Status JobRun::Train(Dataset& data, int64_t batch_size, const std::string& settings) {
  const auto start = Clock::now();
  *phase_ = "building the model";
  ASSIGN_OR_RETURN(torch::nn::AnyModule model, BuildModel(data));
  ASSIGN_OR_RETURN(std::unique_ptr<torch::optim::Optimizer> optimizer,
                   CreateOptimizer(spec_, model.ptr()->parameters()));
  Took("model", start);
  const int world = dp_ != nullptr ? dp_->world_size() : 1;
  const int rank = dp_ != nullptr ? dp_->rank() : 0;
  // A step takes a global batch of world * batch_size from the shuffled order; rank r trains on
  // its r-th slice. The last partial global batch is dropped.
  const int64_t batches = data.train.size() / (batch_size * world);
  const std::string autotuning = ChooseAutotuning(spec_.epochs() * batches);
  if (!settings.empty()) {
    Log(absl::StrCat(autotuning.empty()
                         ? settings
                         : absl::StrReplaceAll(settings, {{"cuDNN autotuning on", autotuning}}),
                     UsesChannelsLast(spec_, device_) ? "; weights channels_last" : "",
                     UsesFusedAdam(spec_, model.ptr()->parameters()) ? "; fused Adam" : "",
                     UsesFusedBatchNorm(*model.ptr(), device_, spec_.amp() == "bf16",
                                        UsesChannelsLast(spec_, device_))
                         ? "; fused bf16 batch norm"
                         : ""));
  }
  TrainStep step(model, optimizer.get(), device_, spec_.amp(), spec_.accumulate(),
                 Augmentation{spec_.random_crop_padding(), spec_.horizontal_flip()},
                 spec_.seed() + static_cast<uint64_t>(rank), loss_, spec_.label_smoothing(),
                 spec_.clip_grad_norm());

  std::unique_ptr<ShardThreads> shard_threads;
  if (batch_shards_.shards > 1) {
    const std::string obstacle = ShardingObstacle(*model.ptr());
    if (!obstacle.empty()) {
      Log("CPU: batches are not split into shards: " + obstacle);
    } else {
      // Each shard on one thread, the BLAS's products too: the shards are the parallelism.
      torch::set_num_threads(1);
      const BlasThreads blas = SetBlasThreads(ChooseBlasThreads(cpu_facts_, 1));
      shard_threads = std::make_unique<ShardThreads>(batch_shards_.shards);
      step.set_shard_threads(shard_threads.get());
      Log(absl::StrFormat(
          "CPU: each batch trained in %d shards at once, %s, gradients added in shard order (%s; "
          "TRAIND_BATCH_SHARDS=1 or --threads N: intra-op threads instead)",
          batch_shards_.shards,
          blas.settable && blas.after != 1
              ? absl::StrCat("one intra-op thread each, the BLAS ", DescribeBlasThreads(blas))
              : "one thread each (intra-op and BLAS)",
          batch_shards_.explanation));
    }
  }

  if (spec_.has_benchmark()) {  // kind "train"
    ASSIGN_OR_RETURN(trainer::v1::BenchResult result,
                     RunTrainBenchmark(spec_.benchmark(), step, data.train, batch_size, device_, stop_));
    TrackPeaks(ReadMemory(device_));
    EmitBench(result);
    return absl::OkStatus();
  }

  if (batches == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size: ", batch_size, world > 1 ? absl::StrCat(" x ", world, " ranks") : "",
                     " is larger than the ", data.train.size(), " training images"));
  }
  const int epochs = spec_.epochs();
  // A function of the global step, so a resumed job continues on the same curve.
  const LrSchedule schedule(spec_, batches);
  double learning_rate = spec_.learning_rate();
  std::optional<trainer::v1::Stopped> stopped;
  const bool checkpoints = !job_dir_.empty();
  Progress progress;
  if (checkpoints) {
    ASSIGN_OR_RETURN(progress, LoadCheckpoint(model, *optimizer, step));
  }
  const bool resumed = progress.global_step > 0;
  // After the checkpoint is loaded (it replaces the parameters' and the optimizer's tensors):
  // the graph updates those tensors in place, so it must capture the loaded ones.
  std::unique_ptr<CudaGraphTrainStep> graph_step;
  if (spec_.cuda_graph()) {
    const auto capture_start = Clock::now();
    absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> created = CudaGraphTrainStep::Create(
        model, *optimizer, spec_, device_, batch_size, data.train.inputs[0], data.train.labels[0],
        CudaGraphTrainStep::Bf16WeightCopiesWanted());
    // A model may do what a graph cannot capture (host syncs, data-dependent control flow). A
    // graph chosen by default, or a TorchScript module's, then trains eagerly and says so;
    // traind's own models asked for a graph must capture.
    const bool scripted = dynamic_cast<const ScriptedModelImpl*>(model.ptr().get()) != nullptr;
    if (!created.ok() && (scripted || cuda_graph_by_default_)) {
      Log(absl::StrCat("CUDA graph: this model cannot be captured (", created.status().message(),
                       "); training without a graph"));
    } else {
      ASSIGN_OR_RETURN(graph_step, std::move(created));
    }
    Took("CUDA graph capture", capture_start);
    if (graph_step && graph_step->bf16_copied_tensors() > 0) {
      Log(absl::StrFormat(
          "CUDA graph: %d conv and linear weights and biases (%.1f M parameters) train through "
          "bf16 copies, updated with their fp32 weights in one pass (no autocast casts)",
          graph_step->bf16_copied_tensors(), graph_step->bf16_copied_elements() / 1e6));
    }
  }
  // After the checkpoint (and init_from's weights) are loaded: loading replaces the parameters'
  // storage, which a reducer attached before would no longer see.
  if (dp_ != nullptr) {
    dp_->BroadcastFromRankZero(*model.ptr());
    dp_->AttachReducer(model.ptr()->parameters(), spec_.gradient_allreduce() == "bf16");
    step.set_before_backward([this] { dp_->PrepareForBackward(); });
    const int threads = torch::get_num_threads();
    Log(absl::StrFormat(
        "Data parallel: %d ranks (%s on %s), batch %d per rank, global batch %d, "
        "%d CPU thread%s per rank; gradients averaged in %s, in %d MiB buckets "
        "during the backward pass",
        world, dp_->backend(), device_.str(), batch_size, batch_size * world, threads,
        threads == 1 ? "" : "s", spec_.gradient_allreduce() == "bf16" ? "bf16" : "fp32",
        static_cast<int>(DataParallel::kBucketBytes >> 20)));
  }
  {
    std::vector<std::string> phases;
    for (const auto& [what, seconds] : startup_)
      phases.push_back(absl::StrFormat("%s %.2f s", what, seconds));
    Log(absl::StrFormat("Start-up: %.2f s in this worker before the first step (%s)",
                        SecondsSince(began_), absl::StrJoin(phases, ", ")));
  }
  double& best_validation = progress.best_validation;
  int& best_epoch = progress.best_epoch;
  // Profiles steps 1..N: step 0 pays one-time costs (allocations, kernel choices).
  StepProfiler profiler;
  int64_t& global_step = progress.global_step;
  const int64_t profile_steps = spec_.profile_steps();
  const auto train_start =
      Clock::now() - std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(progress.train_seconds));
  if (progress.stopped_epoch > 0) {
    stopped.emplace();
    stopped->set_epoch(progress.stopped_epoch);
    stopped->set_reason(progress.stopped_reason);
    stopped->set_train_seconds(progress.train_seconds);
  }
  auto last_checkpoint = Clock::now();
  const int64_t accumulate = std::max(1, spec_.accumulate());
  for (int epoch = progress.epoch; epoch <= epochs; ++epoch) {
    *phase_ = "training";
    const int64_t first_batch = epoch == progress.epoch ? progress.batch : 0;
    // One generator per epoch, derived from the seed, so a resumed job shuffles exactly as an
    // uninterrupted one would.
    torch::Generator shuffle_rng = at::detail::createCPUGenerator(spec_.seed() * 1000003 + epoch);
    // A resumed epoch counts the training time it had before the interruption.
    const auto epoch_start =
        Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                           first_batch > 0 ? progress.epoch_seconds : 0.0));
    auto window_start = Clock::now();
    int64_t window_batches = 0;
    torch::Tensor order = torch::randperm(data.train.size(), shuffle_rng).to(data.train.inputs.device());
    // Summed on the device: reading it every step would synchronise every step.
    torch::Tensor loss_sum = torch::full({}, first_batch > 0 ? progress.loss_sum : 0.0,
                                         torch::TensorOptions().device(device_));
    for (int64_t batch = first_batch; batch < batches; ++batch) {
      // Checkpoints fall between optimizer steps, so no accumulated gradient is lost.
      bool suspending = suspend_ != nullptr && suspend_->load(std::memory_order_relaxed);
      bool stopping = stop_.load(std::memory_order_relaxed);
      bool checkpoint_due =
          checkpoint_interval_ > 0 && SecondsSince(last_checkpoint) >= checkpoint_interval_;
      if (dp_ != nullptr) {
        // Ranks decide together (every kCoordinateEvery steps), or one would stop while the
        // others wait for it in the next all-reduce.
        if (batch % kCoordinateEvery == 0) {
          const std::vector<bool> any = AnyRank({suspending, stopping, checkpoint_due});
          suspending = any[0], stopping = any[1], checkpoint_due = any[2];
        } else {
          suspending = stopping = checkpoint_due = false;
        }
      }
      if (checkpoints && batch % accumulate == 0 && batch > first_batch &&
          (suspending || checkpoint_due)) {
        Synchronize(device_);
        progress.epoch = epoch;
        progress.batch = batch;
        progress.loss_sum = loss_sum.item<double>();
        progress.epoch_seconds = SecondsSince(epoch_start);
        progress.train_seconds = SecondsSince(train_start);
        if (graph_step) RETURN_IF_ERROR(graph_step->SyncOptimizer());
        if (rank == 0) {
          RETURN_IF_ERROR(SaveCheckpoint(model, *optimizer, step, progress, batches,
                                         suspending ? "before stopping" : "on schedule"));
        }
        last_checkpoint = Clock::now();
        if (suspending) return absl::CancelledError("stopped after a checkpoint; it will resume");
      }
      if (stopping && !(suspending && checkpoints)) return absl::CancelledError("cancelled");
      const int64_t first = (batch * world + rank) * batch_size;
      torch::Tensor index = order.slice(0, first, first + batch_size);
      torch::Tensor images = data.train.inputs.index_select(0, index).to(device_);
      torch::Tensor labels = data.train.labels.index_select(0, index).to(device_);
      if (spec_.has_debug() && spec_.debug().step_delay_ms() > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(spec_.debug().step_delay_ms()));
      }
      if (spec_.has_debug() && !spec_.debug().crash_kind().empty() && !resumed &&
          global_step == spec_.debug().crash_at_step()) {
        if (spec_.debug().crash_kind() == "oom") {
          // 1 PiB: more than any device has, so the allocator itself reports out of memory.
          torch::empty({int64_t{1} << 50}, torch::TensorOptions().dtype(torch::kUInt8).device(device_));
        }
        InjectFault(spec_.debug().crash_kind());
      }
      if (profile_steps > 0 && global_step == 1) profiler.Start();
      if (schedule.varies()) {
        learning_rate = schedule.At(global_step);
        if (graph_step) {
          graph_step->SetLearningRate(learning_rate);
        } else {
          SetLearningRate(*optimizer, learning_rate);
        }
      }
      torch::Tensor loss = graph_step ? graph_step->Run(images, labels) : step.Run(images, labels);
      ++global_step;
      if (profiler.running() && global_step == 1 + profile_steps) {
        Synchronize(device_);
        ASSIGN_OR_RETURN(trainer::v1::ProfileResult profile,
                         profiler.Stop(job_dir_.empty() ? "" : job_dir_ + "/trace.json",
                                       static_cast<int>(profile_steps)));
        JobEvent event;
        *event.mutable_profile() = std::move(profile);
        Emit(std::move(event));
      }
      loss_sum += loss.to(torch::kFloat32);
      ++window_batches;

      if (batch % spec_.log_every() == 0) {
        // item() synchronises the device, so the window's timing below is honest. Data
        // parallel: the global batch's loss, the mean of the ranks'.
        const double loss_value = MeanOverRanks(loss.item<double>());
        RETURN_IF_ERROR(CheckLossIsFinite(loss_value, epoch, batch, learning_rate));
        const double window_seconds = SecondsSince(window_start);
        const MemoryReading memory = ReadMemory(device_);
        TrackPeaks(memory);
        JobEvent event;
        auto* metrics = event.mutable_step();
        metrics->set_epoch(epoch);
        metrics->set_epochs(epochs);
        metrics->set_batch(static_cast<int32_t>(batch));
        metrics->set_batches_per_epoch(static_cast<int32_t>(batches));
        metrics->set_loss(loss_value);
        metrics->set_learning_rate(learning_rate);
        metrics->set_samples_per_second(window_batches * batch_size * world /
                                        std::max(window_seconds, 1e-9));
        metrics->set_step_seconds(window_seconds / window_batches);
        metrics->set_current_allocated_bytes(memory.current_allocated);
        metrics->set_driver_allocated_bytes(memory.driver_allocated);
        metrics->set_peak_current_allocated_bytes(peak_current_);
        metrics->set_peak_driver_allocated_bytes(peak_driver_);
        AddRankMemory(memory, metrics);
        Emit(std::move(event));
        window_start = Clock::now();
        window_batches = 0;
      }
    }
    step.Flush();
    Synchronize(device_);
    const double epoch_seconds = SecondsSince(epoch_start);
    // Batch norm's running statistics follow each rank's own slice: rank 0's are the model's (as
    // with DDP's broadcast_buffers), so every rank evaluates, and ends with, the same weights.
    if (dp_ != nullptr) dp_->BroadcastBuffersFromRankZero(*model.ptr());

    JobEvent event;
    auto* summary = event.mutable_epoch_summary();
    summary->set_epoch(epoch);
    summary->set_epochs(epochs);
    summary->set_epoch_seconds_no_eval(epoch_seconds);
    summary->set_train_loss(MeanOverRanks(loss_sum.item<double>()) / batches);
    summary->set_learning_rate(learning_rate);
    RETURN_IF_ERROR(CheckLossIsFinite(summary->train_loss(), epoch, batches - 1, learning_rate));
    if (epoch % spec_.eval_every() == 0 || epoch == epochs) {
      const auto eval_start = Clock::now();
      *phase_ = "evaluating";
      const Evaluation train_eval = Evaluate(model, data.train, device_, spec_.amp(), batch_size,
                                             loss_, data.num_classes, /*with_confusion=*/false,
                                             shard_threads.get());
      const Evaluation validation =
          Evaluate(model, data.validation, device_, spec_.amp(), batch_size, loss_,
                   data.num_classes, /*with_confusion=*/false, shard_threads.get());
      const double score =
          loss_ == LossKind::kMse ? -validation.loss : validation.accuracy;
      summary->set_evaluated(true);
      summary->set_train_accuracy(train_eval.accuracy);
      summary->set_validation_accuracy(validation.accuracy);
      summary->set_validation_loss(validation.loss);
      summary->set_eval_seconds(SecondsSince(eval_start));
      if (spec_.stop_at_accuracy() > 0 && validation.accuracy >= spec_.stop_at_accuracy()) {
        stopped.emplace();
        stopped->set_reason(absl::StrFormat("reached validation accuracy %.4f >= %g",
                                            validation.accuracy, spec_.stop_at_accuracy()));
      }
      if (score > best_validation) {
        best_validation = score;
        best_epoch = epoch;
        if (!job_dir_.empty() && rank == 0) {
          RETURN_IF_ERROR(KeepArtifact(model, "best", epoch, &validation));
        }
      }
    }
    summary->set_best_validation_accuracy(loss_ == LossKind::kMse ? 0.0 : std::max(best_validation, 0.0));
    summary->set_best_epoch(best_epoch);
    summary->set_elapsed_seconds(SecondsSince(train_start));
    // Evaluations since the best one, from the stored best epoch (so a resumed job counts on).
    const int since_best = (epoch - best_epoch) / std::max(1, spec_.eval_every());
    if (!stopped && spec_.early_stop_patience() > 0 && summary->evaluated() &&
        since_best >= spec_.early_stop_patience()) {
      stopped.emplace();
      stopped->set_reason(absl::StrFormat("no better validation score in %d evaluations (best: "
                                          "epoch %d)",
                                          since_best, best_epoch));
    }
    // Every rank evaluates the same weights on the same data, but a stop must be unanimous.
    if (dp_ != nullptr && AnyRank({stopped.has_value()})[0] && !stopped) {
      stopped.emplace();
      stopped->set_reason("another rank's evaluation stopped training");
    }
    if (stopped && epoch == epochs) stopped.reset();  // it ran every epoch: nothing stopped early
    if (stopped) {
      stopped->set_epoch(epoch);
      stopped->set_train_seconds(SecondsSince(train_start));
    }
    Emit(std::move(event));
    if (checkpoints && (stopped || (spec_.checkpoint_every() > 0 && epoch % spec_.checkpoint_every() == 0) ||
                        (checkpoint_interval_ > 0 &&
                         SecondsSince(last_checkpoint) >= checkpoint_interval_))) {
      // A stopped job's checkpoint says so: resumed, it evaluates instead of training on.
      progress.epoch = stopped ? epochs + 1 : epoch + 1;
      progress.train_seconds = SecondsSince(train_start);
      progress.stopped_epoch = stopped ? stopped->epoch() : 0;
      progress.stopped_reason = stopped ? stopped->reason() : "";
      progress.batch = 0;
      progress.loss_sum = 0;
      progress.epoch_seconds = 0;
      if (graph_step) RETURN_IF_ERROR(graph_step->SyncOptimizer());
      if (rank == 0) RETURN_IF_ERROR(SaveCheckpoint(model, *optimizer, step, progress, batches, ""));
      last_checkpoint = Clock::now();
    }
    if (stopped) {
      Log(absl::StrCat("Stopped after epoch ", epoch, " of ", epochs, ": ", stopped->reason()));
      break;
    }
  }
  const double training_seconds = SecondsSince(train_start);
  *phase_ = "evaluating";
  const Evaluation test =
      Evaluate(model, data.test, device_, spec_.amp(), batch_size, loss_, data.num_classes,
               /*with_confusion=*/false, shard_threads.get());
  TrackPeaks(ReadMemory(device_));
  if (dp_ != nullptr) RETURN_IF_ERROR(CheckRanksAgree(model));
  if (!job_dir_.empty() && rank == 0) {
    RETURN_IF_ERROR(KeepArtifact(model, "final", stopped ? stopped->epoch() : epochs, nullptr));
  }

  JobEvent event;
  auto* result = event.mutable_final_result();
  result->set_test_accuracy(test.accuracy);
  result->set_test_loss(test.loss);
  result->set_total_training_seconds(training_seconds);
  result->set_total_seconds(SecondsSince(start));
  result->set_peak_current_allocated_bytes(peak_current_);
  result->set_peak_driver_allocated_bytes(peak_driver_);
  result->set_batch_size(static_cast<int32_t>(batch_size));
  if (stopped) *result->mutable_stopped() = *stopped;
  Emit(std::move(event));
  return absl::OkStatus();
}

absl::Status JobRun::CheckRanksAgree(torch::nn::AnyModule& model) {
  Sha256 sha;
  for (const auto& item : model.ptr()->named_parameters()) {
    const torch::Tensor bytes = item.value().detach().to(torch::kCPU).contiguous();
    sha.Update(absl::string_view(static_cast<const char*>(bytes.data_ptr()), bytes.nbytes()));
  }
  for (const auto& item : model.ptr()->named_buffers()) {
    const torch::Tensor bytes = item.value().detach().to(torch::kCPU).contiguous();
    sha.Update(absl::string_view(static_cast<const char*>(bytes.data_ptr()), bytes.nbytes()));
  }
  const std::vector<std::string> digests = dp_->AllGather(sha.HexDigest());
  std::string listed;
  for (size_t r = 0; r < digests.size(); ++r) {
    absl::StrAppend(&listed, r == 0 ? "" : ", ", r, " ", digests[r].substr(0, 16));
  }
  for (const std::string& digest : digests) {
    if (digest != digests[0]) {
      return absl::InternalError(
          absl::StrCat("data parallel: the ranks' weights differ (sha256 by rank: ", listed, ")"));
    }
  }
  Log(absl::StrCat("Data parallel: every rank ends with the same weights (sha256 by rank: ",
                   listed, ")"));
  return absl::OkStatus();
}

absl::Status JobRun::KeepArtifact(torch::nn::AnyModule& model, const std::string& name,
                                  int epoch, const Evaluation* validation) {
  ASSIGN_OR_RETURN(trainer::v1::Artifact artifact, SaveArtifact(model, job_dir_, name));
  artifact.set_epoch(epoch);
  if (validation != nullptr) artifact.set_validation_accuracy(validation->accuracy);
  JobEvent event;
  *event.mutable_artifact() = std::move(artifact);
  Emit(std::move(event));
  return absl::OkStatus();
}

absl::Status JobRun::SaveCheckpoint(torch::nn::AnyModule& model, torch::optim::Optimizer& optimizer,
                                    TrainStep& step, const Progress& progress, int64_t batches,
                                    const std::string& why) {
  const std::string path = job_dir_ + "/checkpoint.pt";
  auto write = [&](const std::string& temp) {
    torch::serialize::OutputArchive archive;
    model.ptr()->save(archive);
    torch::serialize::OutputArchive optimizer_archive;
    optimizer.save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
    archive.write("epoch", torch::tensor(static_cast<int64_t>(progress.epoch)));
    archive.write("batch", torch::tensor(progress.batch));
    archive.write("loss_sum", torch::tensor(progress.loss_sum, torch::kFloat64));
    archive.write("epoch_seconds", torch::tensor(progress.epoch_seconds, torch::kFloat64));
    archive.write("global_step", torch::tensor(progress.global_step));
    archive.write("best_validation", torch::tensor(progress.best_validation, torch::kFloat64));
    archive.write("best_epoch", torch::tensor(static_cast<int64_t>(progress.best_epoch)));
    archive.write("train_seconds", torch::tensor(progress.train_seconds, torch::kFloat64));
    archive.write("stopped_epoch", torch::tensor(static_cast<int64_t>(progress.stopped_epoch)));
    archive.write("stopped_reason", c10::IValue(progress.stopped_reason));
    // Dropout and initialisation draw from the default generators, augmentation from the step's.
    archive.write("rng_cpu", at::detail::getDefaultCPUGenerator().get_state());
    if (!device_.is_cpu()) {
      archive.write("rng_device", at::globalContext().defaultGenerator(device_).get_state());
    }
    archive.write("rng_augment", step.rng().get_state());
    step.scaler().Save(archive);
    archive.save_to(temp);
  };
  RETURN_IF_ERROR(WriteDurably(write, path));
  if (progress.batch == 0) {
    Log(absl::StrCat("Checkpoint after epoch ", progress.epoch - 1, kInJobDirectory));
  } else {
    Log(absl::StrCat("Checkpoint at epoch ", progress.epoch, ", batch ", progress.batch, "/",
                     batches, why.empty() ? "" : " (" + why + ")", kInJobDirectory));
  }
  return absl::OkStatus();
}

absl::StatusOr<Progress> JobRun::LoadCheckpoint(torch::nn::AnyModule& model,
                                                torch::optim::Optimizer& optimizer,
                                                TrainStep& step) {
  Progress progress;
  const std::string path = job_dir_ + "/checkpoint.pt";
  if (access(path.c_str(), F_OK) != 0) return progress;
  torch::serialize::InputArchive archive;
  archive.load_from(path, device_);
  model.ptr()->load(archive);
  torch::serialize::InputArchive optimizer_archive;
  archive.read("optimizer", optimizer_archive);
  optimizer.load(optimizer_archive);
  auto read = [&](const char* key, torch::Tensor* value) { return archive.try_read(key, *value); };
  torch::Tensor epoch, batch, loss_sum, epoch_seconds, global_step, best, best_at, rng;
  archive.read("epoch", epoch);
  archive.read("best_validation", best);
  archive.read("best_epoch", best_at);
  progress.best_validation = best.item<double>();
  progress.best_epoch = static_cast<int>(best_at.item<int64_t>());
  if (read("batch", &batch)) {
    progress.epoch = static_cast<int>(epoch.item<int64_t>());
    progress.batch = batch.item<int64_t>();
    if (read("loss_sum", &loss_sum)) progress.loss_sum = loss_sum.item<double>();
    if (read("epoch_seconds", &epoch_seconds)) progress.epoch_seconds = epoch_seconds.item<double>();
    if (read("global_step", &global_step)) progress.global_step = global_step.item<int64_t>();
    torch::Tensor train_seconds, stopped_epoch;
    if (read("train_seconds", &train_seconds)) progress.train_seconds = train_seconds.item<double>();
    if (read("stopped_epoch", &stopped_epoch)) {
      progress.stopped_epoch = static_cast<int>(stopped_epoch.item<int64_t>());
      c10::IValue reason;
      if (archive.try_read("stopped_reason", reason) && reason.isString()) {
        progress.stopped_reason = reason.toStringRef();
      }
    }
  } else {
    progress.epoch = static_cast<int>(epoch.item<int64_t>()) + 1;  // the first format: epochs done
  }
  // Generator states are CPU byte tensors whatever device the archive was mapped to.
  if (read("rng_cpu", &rng)) {
    at::Generator cpu = at::detail::getDefaultCPUGenerator();  // a handle: same generator
    cpu.set_state(rng.cpu());
  }
  if (!device_.is_cpu() && read("rng_device", &rng)) {
    at::Generator generator = at::globalContext().defaultGenerator(device_);
    generator.set_state(rng.cpu());
  }
  if (read("rng_augment", &rng)) step.rng().set_state(rng.cpu());
  step.scaler().Load(archive);
  if (progress.batch == 0) {
    Log(absl::StrCat("Resumed from the checkpoint after epoch ", progress.epoch - 1, kInJobDirectory));
  } else {
    Log(absl::StrCat("Resumed from the checkpoint at epoch ", progress.epoch, ", batch ",
                     progress.batch, kInJobDirectory));
  }
  return progress;
}

}  // namespace

absl::Status RunTrainingJob(const trainer::v1::WorkerRequest& request, const EventSink& emit,
                            const std::atomic<bool>& stop, const std::atomic<bool>* suspend) {
  const JobSpec& spec = request.spec();
  std::optional<torch::Device> device;  // for the out-of-memory message
  const char* phase = "starting";
  // cuBLAS reads this when it creates its handle: before anything touches the device.
  if (spec.deterministic()) setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  try {
    absl::StatusOr<torch::Device> resolved = ResolveDevice(spec.device());
    if (!resolved.ok()) return resolved.status();
    device = *resolved;
    // A data-parallel job's ranks are started with torchrun's environment (RANK, WORLD_SIZE...).
    absl::StatusOr<std::optional<RankPlacement>> placement = RankFromEnvironment();
    if (!placement.ok()) return placement.status();
    absl::Status status =
        JobRun(request, emit, stop, suspend, *device, *std::move(placement), &phase).Run();
    ReleaseCachedMemory(*device);
    return status;
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    if (IsOutOfMemoryMessage(what)) {
      std::string in_use;
      if (device.has_value()) {
        const MemoryReading memory = ReadMemory(*device);
        in_use = absl::StrCat(" with ", memory.current_allocated >> 20, " MiB in use (",
                              memory.driver_allocated >> 20, " MiB reserved)");
      }
      // Name what ran out: the batch size is the remedy only while training or evaluating.
      const bool stepping = std::string(phase) == "training" || std::string(phase) == "evaluating";
      return absl::ResourceExhaustedError(absl::StrCat(
          "out of memory on ", spec.device(), " while ", phase,
          stepping ? absl::StrCat(" at batch size ", spec.batch_size()) : "", in_use, ": ", what));
    }
    return absl::InternalError(absl::StrCat("LibTorch error: ", what));
  } catch (const ModelContractError& e) {
    return absl::InvalidArgumentError(e.what());
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("error: ", e.what()));
  }
}

}  // namespace traind
