// Creates the optimizer a JobSpec names (adam, adamw, sgd) over the given parameters. On CUDA,
// Adam and AdamW step with ATen's fused multi-tensor kernel (CreateFusedAdam).
#ifndef TRAIND_ENGINE_OPTIMIZER_FACTORY_H_
#define TRAIND_ENGINE_OPTIMIZER_FACTORY_H_

#include <torch/torch.h>

#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> CreateOptimizer(
    const trainer::v1::JobSpec& spec, std::vector<torch::Tensor> parameters);

// torch::optim::Adam (or AdamW when `decoupled`) whose step() updates every parameter of a group
// at once with ATen's fused kernel (`_fused_adam_` / `_fused_adamw_`, what
// torch.optim.Adam(fused=True) runs) when the parameters are on a CUDA device and this LibTorch
// has the kernel (2.x); otherwise it steps as torch::optim::Adam does. The state (step, exp_avg,
// exp_avg_sq) and the checkpoints are torch::optim::Adam's / AdamW's.
std::unique_ptr<torch::optim::Optimizer> CreateFusedAdam(std::vector<torch::Tensor> parameters,
                                                         double lr, double weight_decay,
                                                         bool decoupled);

// Whether the fused kernel can update these parameters (CUDA fp32, one device, LibTorch 2.x).
bool FusedAdamAvailable(const std::vector<torch::Tensor>& parameters);

// The Adam/AdamW state of `parameters` in `optimizer` (one of CreateFusedAdam's), created zeroed
// where a parameter has none yet. The tensors are the optimizer's own, laid out like their
// parameters: updating them in place (a CUDA graph's captured update does) updates what
// checkpoints save. Step counts are the host's, which the fused kernels do not advance.
struct AdamStateTensors {
  std::vector<torch::Tensor> exp_avgs, exp_avg_sqs;
  std::vector<int64_t> steps;
};
absl::StatusOr<AdamStateTensors> AdamStateOf(torch::optim::Optimizer& optimizer,
                                             const std::vector<torch::Tensor>& parameters);
// Sets each parameter's step count (one per parameter, in AdamStateOf's order), after a CUDA
// graph advanced them on the device.
absl::Status SetAdamSteps(torch::optim::Optimizer& optimizer,
                          const std::vector<torch::Tensor>& parameters,
                          const std::vector<int64_t>& steps);

// Whether CreateOptimizer gives `spec` a fused Adam/AdamW for these parameters.
bool UsesFusedAdam(const trainer::v1::JobSpec& spec, const std::vector<torch::Tensor>& parameters);

// The key of a parameter in Optimizer::state(): its TensorImpl*, which LibTorch 1.x spells as a
// string (c10::guts::to_string of the pointer) and 2.x as the pointer itself.
template <typename Map>
typename Map::key_type StateKey(const Map&, const torch::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream key;
    key << p.unsafeGetTensorImpl();
    return key.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

}  // namespace traind

#endif  // TRAIND_ENGINE_OPTIMIZER_FACTORY_H_
