#include "models/training_job.h"

#include <torch/torch.h>

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "models/dataset.h"
#include "models/device.h"
#include "models/model_factory.h"
#include "models/optimizer_factory.h"

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

// Fraction of correct predictions. Predictions are compared on the CPU: early MPS builds
// reported 0% accuracy when the comparison ran on the device.
double Accuracy(torch::nn::AnyModule& model, const Split& split, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  model.ptr()->eval();
  constexpr int64_t kEvalBatch = 1000;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < split.size(); begin += kEvalBatch) {
    const int64_t end = std::min(begin + kEvalBatch, split.size());
    torch::Tensor logits = model.forward(split.images.slice(0, begin, end).to(device));
    torch::Tensor predicted = logits.argmax(1).to(torch::kCPU);
    correct += predicted.eq(split.labels.slice(0, begin, end)).sum().item<int64_t>();
  }
  model.ptr()->train();
  return split.size() == 0 ? 0.0 : static_cast<double>(correct) / split.size();
}

class TrainingRun {
 public:
  TrainingRun(const JobSpec& spec, const EventSink& emit, const std::atomic<bool>& stop,
              torch::Device device)
      : spec_(spec), emit_(emit), stop_(stop), device_(device) {}

  absl::Status Run();

 private:
  void Emit(JobEvent event) {
    Stamp(&event);
    emit_(std::move(event));
  }
  void TrackPeaks(const MemoryReading& m) {
    peak_current_ = std::max({peak_current_, m.current_allocated, m.peak_current_allocated});
    peak_driver_ = std::max({peak_driver_, m.driver_allocated, m.peak_driver_allocated});
  }

  const JobSpec& spec_;
  const EventSink& emit_;
  const std::atomic<bool>& stop_;
  const torch::Device device_;
  int64_t peak_current_ = 0;
  int64_t peak_driver_ = 0;
};

absl::Status TrainingRun::Run() {
  const auto start = Clock::now();
  torch::manual_seed(spec_.seed());
  if (spec_.has_threads()) torch::set_num_threads(spec_.threads());

  const ModelInput input = InputFor(spec_.model(), ModelInput{});
  ASSIGN_OR_RETURN(ImageDataset data, LoadImageDataset(spec_, input.height, input.width));
  ASSIGN_OR_RETURN(torch::nn::AnyModule model, CreateModel(spec_.model(), input));
  model.ptr()->to(device_);
  ASSIGN_OR_RETURN(std::unique_ptr<torch::optim::Optimizer> optimizer,
                   CreateOptimizer(spec_, model.ptr()->parameters()));

  const int64_t batch_size = spec_.batch_size();
  const int64_t batches = data.train.size() / batch_size;  // the last partial batch is dropped
  if (batches == 0) {
    return absl::InvalidArgumentError(absl::StrCat("batch_size: ", batch_size, " is larger than the ",
                                                   data.train.size(), " training images"));
  }
  const int epochs = spec_.epochs();
  torch::Generator shuffle_rng = at::detail::createCPUGenerator(spec_.seed());

  double best_validation = -1;
  int best_epoch = 0;
  const auto train_start = Clock::now();
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto epoch_start = Clock::now();
    auto window_start = Clock::now();
    int64_t window_batches = 0;
    torch::Tensor order = torch::randperm(data.train.size(), shuffle_rng);
    for (int64_t batch = 0; batch < batches; ++batch) {
      if (stop_.load(std::memory_order_relaxed)) return absl::CancelledError("cancelled");
      torch::Tensor index = order.slice(0, batch * batch_size, (batch + 1) * batch_size);
      torch::Tensor images = data.train.images.index_select(0, index).to(device_);
      torch::Tensor labels = data.train.labels.index_select(0, index).to(device_);
      torch::Tensor loss = torch::nn::functional::cross_entropy(model.forward(images), labels);
      optimizer->zero_grad();
      loss.backward();
      optimizer->step();
      ++window_batches;

      if (batch % spec_.log_every() == 0) {
        // item() synchronises the device, so the window's timing below is honest.
        const double loss_value = loss.item<double>();
        const double window_seconds = SecondsSince(window_start);
        const MemoryReading memory = ReadMemory(device_);
        TrackPeaks(memory);
        JobEvent event;
        auto* step = event.mutable_step();
        step->set_epoch(epoch);
        step->set_epochs(epochs);
        step->set_batch(static_cast<int32_t>(batch));
        step->set_batches_per_epoch(static_cast<int32_t>(batches));
        step->set_loss(loss_value);
        step->set_learning_rate(spec_.learning_rate());
        step->set_samples_per_second(window_batches * batch_size / std::max(window_seconds, 1e-9));
        step->set_step_seconds(window_seconds / window_batches);
        step->set_current_allocated_bytes(memory.current_allocated);
        step->set_driver_allocated_bytes(memory.driver_allocated);
        step->set_peak_current_allocated_bytes(peak_current_);
        step->set_peak_driver_allocated_bytes(peak_driver_);
        Emit(std::move(event));
        window_start = Clock::now();
        window_batches = 0;
      }
    }
    Synchronize(device_);
    const double epoch_seconds = SecondsSince(epoch_start);

    const auto eval_start = Clock::now();
    const double train_accuracy = Accuracy(model, data.train, device_);
    const double validation_accuracy = Accuracy(model, data.validation, device_);
    if (validation_accuracy > best_validation) {
      best_validation = validation_accuracy;
      best_epoch = epoch;
    }
    JobEvent event;
    auto* summary = event.mutable_epoch_summary();
    summary->set_epoch(epoch);
    summary->set_epochs(epochs);
    summary->set_train_accuracy(train_accuracy);
    summary->set_validation_accuracy(validation_accuracy);
    summary->set_best_validation_accuracy(best_validation);
    summary->set_best_epoch(best_epoch);
    summary->set_epoch_seconds_no_eval(epoch_seconds);
    summary->set_eval_seconds(SecondsSince(eval_start));
    summary->set_elapsed_seconds(SecondsSince(train_start));
    Emit(std::move(event));
  }
  const double training_seconds = SecondsSince(train_start);
  const double test_accuracy = Accuracy(model, data.test, device_);
  TrackPeaks(ReadMemory(device_));

  JobEvent event;
  auto* result = event.mutable_final_result();
  result->set_test_accuracy(test_accuracy);
  result->set_total_training_seconds(training_seconds);
  result->set_total_seconds(SecondsSince(start));
  result->set_peak_current_allocated_bytes(peak_current_);
  result->set_peak_driver_allocated_bytes(peak_driver_);
  Emit(std::move(event));
  return absl::OkStatus();
}

bool IsOutOfMemory(const std::string& what) {
  return what.find("out of memory") != std::string::npos ||
         what.find("OutOfMemory") != std::string::npos ||
         what.find("DefaultCPUAllocator: can't allocate memory") != std::string::npos;
}

}  // namespace

absl::Status RunTrainingJob(const JobSpec& spec, const EventSink& emit,
                            const std::atomic<bool>& stop) {
  absl::StatusOr<torch::Device> device = absl::UnknownError("unset");
  try {
    device = ResolveDevice(spec.device());
    if (!device.ok()) return device.status();
    absl::Status status = TrainingRun(spec, emit, stop, *device).Run();
    ReleaseCachedMemory(*device);
    return status;
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    if (IsOutOfMemory(what)) {
      return absl::ResourceExhaustedError(absl::StrCat("out of memory on ", spec.device(),
                                                       " at batch size ", spec.batch_size(), ": ",
                                                       what));
    }
    return absl::InternalError(absl::StrCat("LibTorch error: ", what));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("error: ", e.what()));
  }
}

}  // namespace traind
