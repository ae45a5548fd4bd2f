#include "engine/benchmarks.h"

#include <chrono>

#include "engine/device.h"

namespace traind {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Restores the TF32 switch, which is process-wide state.
class AllowTf32 {
 public:
  explicit AllowTf32(bool allow) : previous_(at::globalContext().allowTF32CuBLAS()) {
    at::globalContext().setAllowTF32CuBLAS(allow);
  }
  ~AllowTf32() { at::globalContext().setAllowTF32CuBLAS(previous_); }

 private:
  bool previous_;
};

}  // namespace

absl::StatusOr<trainer::v1::BenchResult> RunMatmulBenchmark(const trainer::v1::Benchmark& bench,
                                                            const torch::Device& device,
                                                            const std::atomic<bool>& stop) {
  const std::string& dtype_name = bench.dtype();
  const torch::ScalarType dtype = dtype_name == "bf16"   ? torch::kBFloat16
                                  : dtype_name == "fp16" ? torch::kHalf
                                                         : torch::kFloat32;
  AllowTf32 tf32(dtype_name == "tf32");
  const int64_t n = bench.size();
  auto options = torch::TensorOptions().dtype(dtype).device(device);
  torch::Tensor a = torch::randn({n, n}, options);
  torch::Tensor b = torch::randn({n, n}, options);
  torch::Tensor c = torch::empty({n, n}, options);
  for (int i = 0; i < bench.warmup(); ++i) torch::mm_out(c, a, b);
  Synchronize(device);
  const auto start = Clock::now();
  for (int i = 0; i < bench.repeat(); ++i) {
    if (stop.load(std::memory_order_relaxed)) return absl::CancelledError("cancelled");
    torch::mm_out(c, a, b);
  }
  Synchronize(device);
  const double seconds = Seconds(start) / bench.repeat();
  trainer::v1::BenchResult result;
  result.set_kind("matmul");
  result.set_device(device.str());
  result.set_size(static_cast<int32_t>(n));
  result.set_dtype(dtype_name);
  result.set_repeat(bench.repeat());
  result.set_seconds(seconds);
  result.set_tflops(2.0 * n * n * n / seconds / 1e12);
  return result;
}

absl::StatusOr<trainer::v1::BenchResult> RunTrainBenchmark(const trainer::v1::Benchmark& bench,
                                                           TrainStep& step, const Split& train,
                                                           int64_t batch_size,
                                                           const torch::Device& device,
                                                           const std::atomic<bool>& stop) {
  constexpr int kWarmupSteps = 5;
  const int64_t batches = train.size() / batch_size;
  if (batches == 0) {
    return absl::InvalidArgumentError("batch_size: larger than the training set");
  }
  auto batch = [&](int64_t i) {
    const int64_t begin = (i % batches) * batch_size;
    return std::make_pair(train.inputs.slice(0, begin, begin + batch_size).to(device),
                          train.labels.slice(0, begin, begin + batch_size).to(device));
  };
  for (int i = 0; i < kWarmupSteps; ++i) {
    auto [images, labels] = batch(i);
    step.Run(images, labels);
  }
  Synchronize(device);
  const auto start = Clock::now();
  for (int i = 0; i < bench.steps(); ++i) {
    if (stop.load(std::memory_order_relaxed)) return absl::CancelledError("cancelled");
    auto [images, labels] = batch(kWarmupSteps + i);
    step.Run(images, labels);
  }
  Synchronize(device);
  const double seconds = Seconds(start);
  trainer::v1::BenchResult result;
  result.set_kind("train");
  result.set_device(device.str());
  result.set_repeat(bench.steps());
  result.set_seconds(seconds / bench.steps());
  result.set_steps_per_second(bench.steps() / seconds);
  result.set_samples_per_second(bench.steps() * batch_size / seconds);
  return result;
}

}  // namespace traind
