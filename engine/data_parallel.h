// DataParallel: this worker as one rank of a data-parallel job, on PyTorch's own distributed
// engine (c10d), the way DistributedDataParallel works:
//   rendezvous  a TCPStore at MASTER_ADDR:MASTER_PORT (rank 0 serves it), as torchrun sets up;
//   group       Gloo for CPU ranks; NCCL for GPU ranks (a CUDA LibTorch 2.x), one GPU each;
//   start       rank 0's parameters and buffers broadcast to every rank;
//   gradients   c10d's Reducer — DDP's own engine — all-reduces them in ~25 MB buckets as the
//               backward pass produces them (overlapped with it), averaged over the ranks.
// Collectives time out (`timeout`), so a rank that died cannot hang the others for long.
// Not thread-safe: the training loop's thread only.
#ifndef TRAIND_ENGINE_DATA_PARALLEL_H_
#define TRAIND_ENGINE_DATA_PARALLEL_H_

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace traind {

// torchrun's environment contract.
struct RankPlacement {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;
  int master_port = 0;
};

// From RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; nullopt when WORLD_SIZE is unset
// (a single-process job). INVALID_ARGUMENT naming the variable when one is malformed.
absl::StatusOr<std::optional<RankPlacement>> RankFromEnvironment();

// Whether this LibTorch build can run data-parallel jobs on `device`'s kind (false: say why).
absl::Status DataParallelSupported(const torch::Device& device);

class DataParallel {
 public:
  static constexpr int64_t kBucketBytes = 25 * 1024 * 1024;  // DDP's default bucket_cap_mb

  // Joins the job's process group (blocks until every rank has, or `timeout`).
  static absl::StatusOr<std::unique_ptr<DataParallel>> Join(const RankPlacement& placement,
                                                            const torch::Device& device,
                                                            absl::Duration timeout);
  ~DataParallel();

  int rank() const { return placement_.rank; }
  int world_size() const { return placement_.world_size; }
  const std::string& backend() const { return backend_; }

  // Every rank starts from rank 0's parameters and buffers.
  void BroadcastFromRankZero(torch::nn::Module& module);
  // Collective: rank 0's buffers (batch norm's running statistics, which follow each rank's own
  // slice of the data) to every rank, as DDP's broadcast_buffers does.
  void BroadcastBuffersFromRankZero(torch::nn::Module& module);
  // Averages `parameters`' gradients over the ranks during each backward pass from now on. Load
  // any weights first: Module::load replaces a parameter's storage, and a reducer attached before
  // then averages gradients the parameter no longer receives (the ranks drift apart).
  // `bf16_gradients` (NCCL only): buckets travel as bf16, as DDP's bf16_compress_hook.
  void AttachReducer(const std::vector<torch::Tensor>& parameters, bool bf16_gradients = false);
  // Call before each backward pass (DDP's forward does this).
  void PrepareForBackward();

  // Collective (every rank must call it at the same point): each flag true on all ranks if it is
  // true on any.
  std::vector<bool> Any(const std::vector<bool>& flags);
  // Collective: every rank's `text` (all the same length, e.g. a digest), by rank.
  std::vector<std::string> AllGather(const std::string& text);
  // Collective: the mean of `value` over the ranks.
  double Mean(double value);

 private:
  struct Groups;
  // Where the helpers' small collectives (Any, AllGather, Mean) keep their tensors.
  torch::Device collective_device() const;
  DataParallel(RankPlacement placement, torch::Device device, std::unique_ptr<Groups> groups,
               std::string backend);

  const RankPlacement placement_;
  const torch::Device device_;
  std::unique_ptr<Groups> groups_;
  const std::string backend_;
};

}  // namespace traind

#endif  // TRAIND_ENGINE_DATA_PARALLEL_H_
