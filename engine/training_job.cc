#include "engine/training_job.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/cpu_threads.h"
#include "common/job_spec.h"
#include "common/status_macros.h"
#include "data/dataset.h"
#include "data/prepared_cache.h"
#include "engine/artifacts.h"
#include "engine/batch_shards.h"
#include "engine/batch_size_search.h"
#include "engine/benchmarks.h"
#include "engine/blas_threads.h"
#include "engine/checkpoint.h"
#include "engine/cuda_graph_step.h"
#include "engine/cudnn_autotune.h"
#include "engine/data_parallel.h"
#include "engine/device.h"
#include "engine/device_activity.h"
#include "engine/elapsed.h"
#include "engine/evaluate.h"
#include "engine/fast_paths.h"
#include "engine/job_report.h"
#include "engine/loss.h"
#include "engine/optimizer_factory.h"
#include "engine/train_step.h"
#include "engine/training_loop.h"
#include "engine/worker_readiness.h"
#include "models/batch_norm.h"
#include "models/model_factory.h"
#include "models/scripted_model.h"

namespace traind {

namespace {

using Clock = std::chrono::steady_clock;
using trainer::v1::JobEvent;
using trainer::v1::JobSpec;

// The jobs that share the host's cores with this one: the CPU lane's slots (`traind --slots
// cpu=N`), or a search's trials packed on the CPU when more (WorkerRequest.cpu_sharers).
int CpuSharers(const trainer::v1::WorkerRequest& request) {
  const char* slots = std::getenv("TRAIND_CPU_SLOTS");
  const int n = slots == nullptr ? 1 : std::atoi(slots);
  return std::max({1, n, request.cpu_sharers()});
}

// Data parallel: how long a collective (or the rendezvous) may wait for a rank before failing.
constexpr absl::Duration kCollectiveTimeout = absl::Minutes(2);

// One job in this worker: sets up the machine (threads, device, the data-parallel group), the
// data and the batch size, then benchmarks, evaluates or trains. Training builds the model, the
// optimizer and the step, resumes from a checkpoint and hands them to a TrainingLoop.
class JobRun {
 public:
  // `phase` says what the job is doing, for an error caught outside (out of memory).
  JobRun(const trainer::v1::WorkerRequest& request, const EventSink& emit,
         const std::atomic<bool>& stop, const std::atomic<bool>* suspend, torch::Device device,
         std::optional<RankPlacement> placement, const char** phase)
      : phase_(phase),
        spec_(request.spec()),
        request_(request),
        data_roots_(request.data_roots().begin(), request.data_roots().end()),
        loss_(LossKindFromName(request.spec().loss())),
        report_(emit),
        stop_(stop),
        suspend_(suspend),
        device_(device),
        placement_(std::move(placement)) {}

  absl::Status Run();

 private:
  // Where a job's start-up went (seconds), logged once training begins: each phase in order.
  void Took(const std::string& phase, Clock::time_point since) {
    startup_.emplace_back(phase, SecondsSince(since));
  }
  void LogStartup();

  // Threads for the job's intra-op pool and the BLAS; a CPU job's batch shards.
  void SetUpCpuThreads(bool matmul);
  // The device's context and settings; returns the settings line for the log.
  std::string SetUpDevice();
  absl::StatusOr<Dataset> LoadData();
  // The fast paths (device-resident data, a CUDA graph) for this job and data, into spec_.
  void ChooseFastPathsFor(const Dataset& data);
  absl::StatusOr<int64_t> ChooseBatchSizeFor(Dataset& data);

  absl::Status Train(Dataset& data, int64_t batch_size, const std::string& settings);
  // The model for `data`, on the device, with init_from's weights when the spec names some.
  absl::StatusOr<torch::nn::AnyModule> BuildModel(const Dataset& data);
  void LogSettings(const std::string& settings, torch::nn::AnyModule& model, int64_t batches);
  // The job's checkpoint, if it has one, into the model, optimizer and step.
  absl::StatusOr<Progress> Resume(torch::nn::AnyModule& model, torch::optim::Optimizer& optimizer,
                                  TrainStep& step);
  // A CUDA graph of the step when the spec wants one and the model can be captured; nullptr:
  // train eagerly.
  absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> CaptureStep(
      torch::nn::AnyModule& model, torch::optim::Optimizer& optimizer, Dataset& data,
      int64_t batch_size);
  void JoinReducer(torch::nn::AnyModule& model, TrainStep& step, int64_t batch_size);
  // evaluate_only: init_from's weights over the test split once.
  absl::Status EvaluateOnly(Dataset& data);

  const char** const phase_;
  // The request's spec with the fast paths resolved (ChooseFastPaths) once the data is loaded.
  JobSpec spec_;
  const trainer::v1::WorkerRequest& request_;
  // The data is opened beneath these where it is read (WorkerRequest.data_roots).
  const std::vector<std::string> data_roots_;
  const LossKind loss_;
  JobReport report_;
  const std::atomic<bool>& stop_;
  const std::atomic<bool>* const suspend_;
  const torch::Device device_;
  const std::optional<RankPlacement> placement_;  // set: this worker is one rank of several
  std::unique_ptr<DataParallel> dp_;              // joined in Run when placement_ is set
  CpuFacts cpu_facts_;                            // read in Run for CPU jobs and ranks
  BatchShards batch_shards_;  // a CPU job's, chosen in Run; Train checks the model can take them
  bool cuda_graph_by_default_ = false;  // a capture failure falls back to the eager step
  std::vector<std::pair<std::string, double>> startup_;
  Clock::time_point began_ = Clock::now();
};

absl::Status JobRun::Run() {
  torch::manual_seed(spec_.seed());
  const bool matmul = spec_.has_benchmark() && spec_.benchmark().kind() == "matmul";
  SetUpCpuThreads(matmul);
  if (matmul) {
    ASSIGN_OR_RETURN(trainer::v1::BenchResult result,
                     RunMatmulBenchmark(spec_.benchmark(), device_, stop_));
    if (device_.is_cpu()) result.set_threads(torch::get_num_threads());
    report_.Bench(result);
    return absl::OkStatus();
  }
  const std::string settings = SetUpDevice();
  if (placement_.has_value()) {
    if (spec_.has_benchmark() || spec_.batch_size_auto() || spec_.cuda_graph() ||
        spec_.evaluate_only()) {
      return absl::InvalidArgumentError(
          "processes: data-parallel jobs train; benchmarks, --batch-size auto, --cuda-graph and "
          "evaluate_only run in one process");
    }
    *phase_ = "joining the other ranks";
    ASSIGN_OR_RETURN(dp_, DataParallel::Join(*placement_, device_, kCollectiveTimeout));
    report_.set_speaks(dp_->rank() == 0);  // rank 0 speaks for all
  }
  ASSIGN_OR_RETURN(Dataset data, LoadData());
  ASSIGN_OR_RETURN(const int64_t batch_size, ChooseBatchSizeFor(data));
  if (spec_.evaluate_only()) return EvaluateOnly(data);
  return Train(data, batch_size, settings);
}

void JobRun::SetUpCpuThreads(bool matmul) {
  // CPU jobs, ranks and trials packed on a GPU read the machine once: threads, shards and the
  // BLAS's threads follow.
  const bool packed_on_gpu = !device_.is_cpu() && request_.cpu_sharers() > 1;
  if (device_.is_cpu() || placement_.has_value() || packed_on_gpu) cpu_facts_ = ReadCpuFacts();
  if (spec_.has_threads()) {
    torch::set_num_threads(spec_.threads());
  } else if (matmul && request_.exclusive() && device_.is_cpu() && !placement_.has_value()) {
    const CpuThreads chosen = WholeMachineThreads(cpu_facts_, "a benchmark that runs alone");
    torch::set_num_threads(chosen.threads);
    report_.Log("CPU: " + chosen.explanation);
  } else if (placement_.has_value()) {
    // Ranks share the machine's cores (torchrun's OMP_NUM_THREADS gives each 1); each taking
    // them all would oversubscribe them.
    const CpuThreads chosen =
        ChooseCpuThreads(cpu_facts_, placement_->world_size, "ranks of this job");
    torch::set_num_threads(chosen.threads);
    if (device_.is_cpu()) report_.Log("CPU: " + chosen.explanation);
  } else if (device_.is_cpu()) {
    const int sharing = CpuSharers(request_);
    const std::string sharers = sharing == 1 ? "CPU job at a time" : "CPU jobs at a time";
    const CpuThreads chosen = ChooseCpuThreads(cpu_facts_, sharing, sharers);
    torch::set_num_threads(chosen.threads);
    report_.Log("CPU: " + chosen.explanation);
    batch_shards_ = ChooseBatchShards(cpu_facts_, sharing, sharers);
  } else if (packed_on_gpu) {
    // Its host-side work (preparing images, launching kernels) shares the cores with the other
    // trials on its GPU; LibTorch's default, every core each, would oversubscribe them.
    const CpuThreads chosen =
        ChooseCpuThreads(cpu_facts_, request_.cpu_sharers(), "trials sharing its GPU");
    torch::set_num_threads(chosen.threads);
    report_.Log("CPU: " + chosen.explanation);
  }
  if (device_.is_cpu()) {
    // The BLAS's own thread pool follows the job's threads (engine/blas_threads.h says why).
    const int blas_threads = ChooseBlasThreads(cpu_facts_, torch::get_num_threads());
    const std::string blas = DescribeBlasThreads(SetBlasThreads(blas_threads));
    if (!blas.empty()) report_.Log("BLAS: " + blas);
  }
}

std::string JobRun::SetUpDevice() {
  const auto start = Clock::now();
  if (!device_.is_cpu()) {
    PrepareDevice(device_);  // timed apart: a warm worker has done it already
    Took(device_.str() + " context", start);
  }
  std::string settings = ConfigureDevice(device_, spec_.tf32());
  if (spec_.deterministic()) {
    // After ConfigureDevice, which turns cuDNN autotuning on: deterministic turns it off.
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
    at::globalContext().setDeterministicCuDNN(true);
    at::globalContext().setBenchmarkCuDNN(false);
    report_.Log(
        "Deterministic: LibTorch's deterministic algorithms, cuDNN autotuning off, seeded "
        "generators");
  }
  return settings;
}

absl::StatusOr<Dataset> JobRun::LoadData() {
  *phase_ = "loading the dataset";
  auto start = Clock::now();
  const int64_t image_size = ImageSizeFor(spec_);
  // A CPU job's images as an earlier job prepared them (traind's cache): mapped, not made again.
  const char* cache = std::getenv("TRAIND_CACHE_DIR");
  const std::string cache_dir = cache != nullptr && device_.is_cpu() ? cache : "";
  std::string prepared_key;
  if (!cache_dir.empty()) {
    ASSIGN_OR_RETURN(prepared_key, PreparedKey(spec_, image_size, BeneathRoots(data_roots_)));
    if (std::optional<Dataset> prepared = MapPrepared(cache_dir, prepared_key)) {
      Took("dataset (prepared, from traind's cache)", start);
      ChooseFastPathsFor(*prepared);
      return *std::move(prepared);
    }
  }
  ASSIGN_OR_RETURN(Dataset data, ReadDataset(spec_, image_size, request_.data_path(), data_roots_));
  Took("dataset", start);
  ChooseFastPathsFor(data);
  // A resident dataset travels as the files' bytes and becomes floats on the device: a quarter of
  // the copy, and the GPU converts Fashion-MNIST in milliseconds where the CPU took 0.2-0.3 s.
  const bool resident = spec_.device_resident() && !device_.is_cpu();
  *phase_ = resident ? "preparing the dataset on the device (--device-resident)"
                     : "preparing the dataset";
  start = Clock::now();
  PrepareImages(data, spec_, image_size, resident ? device_ : torch::Device(torch::kCPU));
  if (resident) Synchronize(device_);
  Took(resident ? "images on " + device_.str() : "images", start);
  if (!prepared_key.empty() && !resident) KeepPrepared(cache_dir, prepared_key, data);
  return data;
}

void JobRun::ChooseFastPathsFor(const Dataset& data) {
  FastPathFacts facts;
  facts.cuda = device_.is_cuda();
  facts.data_parallel = placement_.has_value();
  facts.dataset_bytes = PreparedBytes(data, spec_, ImageSizeFor(spec_));
  facts.free_device_bytes = facts.cuda ? AvailableMemory(device_) : 0;
  facts.graphs_built = CudaGraphTrainStep::Available();
  const FastPaths fast = ChooseFastPaths(spec_, facts);
  cuda_graph_by_default_ = fast.cuda_graph && !spec_.has_cuda_graph();
  spec_.set_device_resident(fast.device_resident);
  spec_.set_cuda_graph(fast.cuda_graph);
  if (!fast.explanation.empty()) report_.Log(fast.explanation);
}

absl::StatusOr<int64_t> JobRun::ChooseBatchSizeFor(Dataset& data) {
  if (!spec_.batch_size_auto()) return spec_.batch_size();
  *phase_ = "choosing the batch size";
  const ModelInput input{data.channels, data.height, data.width, data.num_classes};
  ASSIGN_OR_RETURN(BatchSizeChoice choice,
                   ChooseBatchSize(spec_, input, {data.train.inputs[0], data.train.labels[0]},
                                   request_.model_path(), device_, data.train.size(), stop_));
  report_.Log(choice.explanation);
  torch::manual_seed(spec_.seed());  // the search must not change the model's initialisation
  return choice.batch_size;
}

absl::StatusOr<torch::nn::AnyModule> JobRun::BuildModel(const Dataset& data) {
  const ModelInput input{data.channels, data.height, data.width, data.num_classes};
  ASSIGN_OR_RETURN(torch::nn::AnyModule model, CreateModel(spec_, input, request_.model_path()));
  if (const auto* scripted = dynamic_cast<const ScriptedModelImpl*>(model.ptr().get())) {
    report_.Log(absl::StrCat("Model: TorchScript ", scripted->Describe()));
  }
  PlaceModel(model, spec_, device_);
  if (!request_.init_path().empty()) {
    ASSIGN_OR_RETURN(int tensors, LoadWeights(model, request_.init_path()));
    ASSIGN_OR_RETURN(InitFrom init, ParseInitFrom(spec_.init_from()));
    report_.Log(absl::StrCat("Weights from ", init.Describe(), " (", tensors, " tensors)"));
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
  if (test.class_samples.defined()) {
    const int64_t classes = test.class_samples.size(0);
    evaluation->set_classes(static_cast<int32_t>(classes));
    const torch::Tensor samples = test.class_samples.contiguous();
    const torch::Tensor correct = test.class_correct.contiguous();
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t n = samples.data_ptr<int64_t>()[c];
      evaluation->add_class_samples(n);
      evaluation->add_class_accuracy(
          n == 0 ? 0.0 : static_cast<double>(correct.data_ptr<int64_t>()[c]) / n);
    }
    if (test.confusion.defined()) {
      const torch::Tensor confusion = test.confusion.contiguous();
      const int64_t* counts = confusion.data_ptr<int64_t>();
      for (int64_t i = 0; i < classes * classes; ++i) evaluation->add_confusion(counts[i]);
    }
  }
  report_.Emit(std::move(event));
  JobEvent final_event;
  auto* result = final_event.mutable_final_result();
  result->set_test_accuracy(test.accuracy);
  result->set_test_loss(test.loss);
  result->set_total_seconds(SecondsSince(start));
  result->set_batch_size(spec_.batch_size());
  report_.TrackPeaks(ReadMemory(device_));
  result->set_peak_current_allocated_bytes(report_.peak_current());
  result->set_peak_driver_allocated_bytes(report_.peak_driver());
  report_.Emit(std::move(final_event));
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
  const absl::StatusOr<int64_t> batches = BatchesPerEpoch(data.train.size(), batch_size, world);
  LogSettings(settings, model, batches.value_or(0));
  TrainStep step(model, optimizer.get(), device_, spec_.amp(), spec_.accumulate(),
                 Augmentation{spec_.random_crop_padding(), spec_.horizontal_flip()},
                 spec_.seed() + static_cast<uint64_t>(rank), loss_, spec_.label_smoothing(),
                 spec_.clip_grad_norm());
  const std::unique_ptr<ShardThreads> shards =
      TrainInShards(batch_shards_, cpu_facts_, *model.ptr(), step, report_);
  if (spec_.has_benchmark()) {  // kind "train"
    ASSIGN_OR_RETURN(
        trainer::v1::BenchResult result,
        RunTrainBenchmark(spec_.benchmark(), step, data.train, batch_size, device_, stop_));
    report_.TrackPeaks(ReadMemory(device_));
    report_.Bench(result);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(batches.status());
  ASSIGN_OR_RETURN(const Progress progress, Resume(model, *optimizer, step));
  // After the checkpoint is loaded (it replaces the parameters' and the optimizer's tensors):
  // the graph updates those tensors in place, so it must capture the loaded ones.
  ASSIGN_OR_RETURN(const std::unique_ptr<CudaGraphTrainStep> graph,
                   CaptureStep(model, *optimizer, data, batch_size));
  // After the checkpoint (and init_from's weights) are loaded: loading replaces the parameters'
  // storage, which a reducer attached before would no longer see.
  if (dp_ != nullptr) JoinReducer(model, step, batch_size);
  LogStartup();
  TrainingLoop loop(
      LoopParts{spec_, device_, data, batch_size, loss_, model, *optimizer, step,
                graph != nullptr ? *graph : static_cast<StepRunner&>(step), shards.get(), dp_.get(),
                request_.job_dir(), request_.checkpoint_interval_seconds(), stop_, suspend_,
                request_.pause_after_epoch(), report_, phase_, start},
      progress);
  return loop.Run();
}

void JobRun::LogSettings(const std::string& settings, torch::nn::AnyModule& model,
                         int64_t batches) {
  const std::string autotuning = ChooseAutotuning(spec_.epochs() * batches);
  if (settings.empty()) return;
  const bool channels_last = UsesChannelsLast(spec_, device_);
  report_.Log(absl::StrCat(
      autotuning.empty() ? settings
                         : absl::StrReplaceAll(settings, {{"cuDNN autotuning on", autotuning}}),
      channels_last ? "; weights channels_last" : "",
      UsesFusedAdam(spec_, model.ptr()->parameters()) ? "; fused Adam" : "",
      UsesFusedBatchNorm(*model.ptr(), device_, spec_.amp(), channels_last)
          ? absl::StrCat("; fused ", spec_.amp().empty() ? "fp32" : spec_.amp(), " batch norm")
          : ""));
}

absl::StatusOr<Progress> JobRun::Resume(torch::nn::AnyModule& model,
                                        torch::optim::Optimizer& optimizer, TrainStep& step) {
  if (request_.job_dir().empty()) return Progress{};
  const TrainingState state{*model.ptr(), optimizer, step.rng(), step.scaler(), device_};
  ASSIGN_OR_RETURN(std::optional<Progress> progress,
                   ReadCheckpoint(CheckpointPath(request_.job_dir()), state));
  if (!progress.has_value()) return Progress{};
  if (progress->batch == 0) {
    report_.Log(absl::StrCat("Resumed from the checkpoint after epoch ", progress->epoch - 1, ": ",
                             kCheckpointInJobDirectory));
  } else {
    report_.Log(absl::StrCat("Resumed from the checkpoint at epoch ", progress->epoch, ", batch ",
                             progress->batch, ": ", kCheckpointInJobDirectory));
  }
  return *progress;
}

absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> JobRun::CaptureStep(
    torch::nn::AnyModule& model, torch::optim::Optimizer& optimizer, Dataset& data,
    int64_t batch_size) {
  if (!spec_.cuda_graph()) return nullptr;
  const auto start = Clock::now();
  absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> graph = CudaGraphTrainStep::Create(
      model, optimizer, spec_, device_, batch_size, data.train.inputs[0], data.train.labels[0],
      CudaGraphTrainStep::Bf16WeightCopiesWanted());
  Took("CUDA graph capture", start);
  // A model may do what a graph cannot capture (host syncs, data-dependent control flow). A
  // graph chosen by default, or a TorchScript module's, then trains eagerly and says so;
  // traind's own models asked for a graph must capture.
  const bool scripted = dynamic_cast<const ScriptedModelImpl*>(model.ptr().get()) != nullptr;
  if (!graph.ok() && (scripted || cuda_graph_by_default_)) {
    report_.Log(absl::StrCat("CUDA graph: this model cannot be captured (",
                             graph.status().message(), "); training without a graph"));
    return nullptr;
  }
  if (graph.ok() && (*graph)->bf16_copied_tensors() > 0) {
    report_.Log(absl::StrFormat(
        "CUDA graph: %d conv and linear weights and biases (%.1f M parameters) train through "
        "bf16 copies, updated with their fp32 weights in one pass (autocast casts none of them)",
        (*graph)->bf16_copied_tensors(), (*graph)->bf16_copied_elements() / 1e6));
  }
  return graph;
}

void JobRun::JoinReducer(torch::nn::AnyModule& model, TrainStep& step, int64_t batch_size) {
  dp_->BroadcastFromRankZero(*model.ptr());
  dp_->AttachReducer(TrainableParameters(*model.ptr()), spec_.gradient_allreduce() == "bf16");
  step.set_before_backward([this] { dp_->PrepareForBackward(); });
  const int threads = torch::get_num_threads();
  report_.Log(absl::StrFormat(
      "Data parallel: %d ranks (%s on %s), batch %d per rank, global batch %d, "
      "%d CPU thread%s per rank; gradients averaged in %s, in %d MiB buckets "
      "during the backward pass",
      dp_->world_size(), dp_->backend(), device_.str(), batch_size, batch_size * dp_->world_size(),
      threads, threads == 1 ? "" : "s", spec_.gradient_allreduce() == "bf16" ? "bf16" : "fp32",
      static_cast<int>(DataParallel::kBucketBytes >> 20)));
}

void JobRun::LogStartup() {
  std::vector<std::string> phases;
  for (const auto& [what, seconds] : startup_) {
    phases.push_back(absl::StrFormat("%s %.2f s", what, seconds));
  }
  // A job that waited for its worker to load or prepare waited before these phases began.
  std::string worker;
  if (const std::optional<WorkerReadiness> readiness = NotedWorkerReadiness()) {
    worker =
        readiness->jobs_served_before > 0
            ? absl::StrFormat(
                  "; the worker had run %d job%s before this one%s and waited %.2f s for it",
                  readiness->jobs_served_before, readiness->jobs_served_before == 1 ? "" : "s",
                  device_.is_cpu() ? "" : absl::StrCat(" (its ", device_.str(), " context made)"),
                  readiness->idle_seconds)
            : absl::StrFormat(
                  "; the worker was ready %.2f s after it started and waited %.2f s "
                  "for this job",
                  readiness->ready_after_seconds, readiness->idle_seconds);
  }
  report_.Log(absl::StrFormat("Start-up: %.2f s in this worker before the first step (%s)%s",
                              SecondsSince(began_), absl::StrJoin(phases, ", "), worker));
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
    // Its busy share counts from here (engine/device_activity.h).
    if (const std::string unread = StartDeviceActivity(*device); !unread.empty()) {
      JobReport(emit).Log(unread);
    }
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
