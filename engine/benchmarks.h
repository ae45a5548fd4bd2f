// Benchmark jobs. Clocks are read only after the device is synchronised.
//   matmul: n x n times n x n in fp32 / tf32 / bf16 / fp16, `warmup` untimed products, then
//           `repeat` timed ones -> seconds per product and TFLOP/s (2 n^3 per product).
//   train:  a model's training steps with no evaluation: 5 warm-up steps, then `steps` timed
//           -> steps/s and samples/s.
#ifndef TRAIND_ENGINE_BENCHMARKS_H_
#define TRAIND_ENGINE_BENCHMARKS_H_

#include <torch/torch.h>

#include <atomic>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "engine/train_step.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

absl::StatusOr<trainer::v1::BenchResult> RunMatmulBenchmark(const trainer::v1::Benchmark& bench,
                                                            const torch::Device& device,
                                                            const std::atomic<bool>& stop);

absl::StatusOr<trainer::v1::BenchResult> RunTrainBenchmark(const trainer::v1::Benchmark& bench,
                                                           TrainStep& step, const Split& train,
                                                           int64_t batch_size,
                                                           const torch::Device& device,
                                                           const std::atomic<bool>& stop);

}  // namespace traind

#endif  // TRAIND_ENGINE_BENCHMARKS_H_
