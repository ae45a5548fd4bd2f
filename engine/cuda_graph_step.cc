#include "engine/cuda_graph_step.h"

#include <cmath>

#include "absl/strings/str_cat.h"

#if defined(TRAIND_HAVE_CUDA) && TORCH_VERSION_MAJOR >= 2
#define TRAIND_HAVE_CUDA_GRAPHS 1
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "engine/loss.h"
#include "engine/mixed_precision.h"
#include "engine/optimizer_factory.h"
#endif

namespace traind {

#ifdef TRAIND_HAVE_CUDA_GRAPHS
namespace {

class GraphStep : public CudaGraphTrainStep {
 public:
  GraphStep(torch::nn::AnyModule model, torch::optim::Optimizer& optimizer,
            const trainer::v1::JobSpec& spec, const torch::Device& device)
      : model_(std::move(model)),
        optimizer_(optimizer),
        device_(device),
        amp_(spec.amp()),
        loss_kind_(LossKindFromName(spec.loss())),
        label_smoothing_(spec.label_smoothing()),
        clip_grad_norm_(spec.clip_grad_norm()),
        adamw_(spec.optimizer() == "adamw"),
        learning_rate_(spec.learning_rate()),
        weight_decay_(spec.has_weight_decay() ? spec.weight_decay() : (adamw_ ? 1e-2 : 0.0)) {}

  absl::Status Capture(int64_t batch_size, const torch::Tensor& sample,
                       const torch::Tensor& label_sample) {
    auto floats = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
    std::vector<int64_t> shape = {batch_size};
    for (int64_t d : sample.sizes()) shape.push_back(d);
    images_ = torch::zeros(shape, floats);
    std::vector<int64_t> label_shape = {batch_size};
    for (int64_t d : label_sample.sizes()) label_shape.push_back(d);
    labels_ = torch::zeros(label_shape, floats.dtype(label_sample.scalar_type()));
    loss_ = torch::zeros({}, floats);
    // float32, as torch.optim's fused Adam takes a tensor learning rate.
    lr_ = torch::full({}, learning_rate_, floats);
    for (torch::Tensor& p : model_.ptr()->parameters()) {
      if (p.requires_grad()) params_.push_back(p);
    }
    absl::StatusOr<AdamStateTensors> state = AdamStateOf(optimizer_, params_);
    if (!state.ok()) return state.status();
    exp_avgs_ = state->exp_avgs;
    exp_avg_sqs_ = state->exp_avg_sqs;
    for (int64_t count : state->steps) {
      steps_.push_back(torch::full({}, static_cast<double>(count), floats));
    }
    // Warm-up runs the real step (allocations, cuDNN/cuBLAS choices) before capture; its effect
    // on the weights, the optimizer state and batch-norm statistics is undone afterwards.
    std::vector<torch::Tensor> saved;
    for (const auto& t : model_.ptr()->parameters()) saved.push_back(t.detach().clone());
    std::vector<torch::Tensor> saved_buffers;
    for (const auto& t : model_.ptr()->buffers()) saved_buffers.push_back(t.detach().clone());
    std::vector<torch::Tensor> saved_state;
    for (const auto* list : {&exp_avgs_, &exp_avg_sqs_, &steps_}) {
      for (const auto& t : *list) saved_state.push_back(t.clone());
    }

    auto undo_warm_up = [&] {
      torch::NoGradGuard no_grad;
      auto params = model_.ptr()->parameters();
      for (size_t i = 0; i < params.size(); ++i) params[i].copy_(saved[i]);
      auto buffers = model_.ptr()->buffers();
      for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(saved_buffers[i]);
      size_t next = 0;
      for (auto* list : {&exp_avgs_, &exp_avg_sqs_, &steps_}) {
        for (auto& t : *list) t.copy_(saved_state[next++]);
      }
      torch::cuda::synchronize(device_.index());
    };

    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, device_.index());
    side.synchronize();
    bool capturing = false;
    try {
      c10::cuda::CUDAStreamGuard guard(side);
      for (int i = 0; i < 3; ++i) Step();
      side.synchronize();
      graph_ = std::make_unique<at::cuda::CUDAGraph>();
      graph_->capture_begin();
      capturing = true;
      Step();
      capturing = false;
      graph_->capture_end();
    } catch (const std::exception& e) {
      // A model that does what a graph cannot hold (a host sync, data-dependent control flow):
      // leave capture mode, put everything back, and let the caller train eagerly or fail.
      if (capturing) {
        try {
          graph_->capture_end();
        } catch (const std::exception&) {  // the capture was invalidated: ending it is enough
        }
      }
      graph_.reset();
      const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
      std::string what = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
      if (what.size() > 500) what.resize(500);
      try {
        side.synchronize();
        undo_warm_up();
        for (torch::Tensor& p : params_) p.mutable_grad() = torch::Tensor();  // the warm-up's
      } catch (const std::exception& cleanup) {
        absl::StrAppend(&what, "; then, putting the weights back: ", cleanup.what());
        if (what.size() > 1000) what.resize(1000);
      }
      return absl::FailedPreconditionError(
          absl::StrCat("cannot capture the training step: ", what));
    }
    side.synchronize();
    undo_warm_up();
    return absl::OkStatus();
  }

  torch::Tensor Run(const torch::Tensor& images, const torch::Tensor& labels) override {
    images_.copy_(images, /*non_blocking=*/true);
    labels_.copy_(labels, /*non_blocking=*/true);
    graph_->replay();
    return loss_;
  }

  void SetLearningRate(double learning_rate) override {
    if (learning_rate == learning_rate_) return;  // a constant rate costs no kernel per step
    learning_rate_ = learning_rate;
    lr_.fill_(learning_rate);  // on the current stream, ordered before the next replay
  }

  absl::Status SyncOptimizer() override {
    std::vector<int64_t> counts;
    for (const torch::Tensor& t : steps_) counts.push_back(std::llround(t.item<double>()));
    return SetAdamSteps(optimizer_, params_, counts);
  }

 private:
  // One step, written with in-place updates of fixed buffers only, so it can be replayed.
  // Gradients are set to none before backward, so backward allocates them — inside the graph's
  // memory pool during capture, at the same addresses on every replay. (Zeroing buffers we hold
  // would not work: autograd replaces a .grad it sees shared instead of adding into it.)
  void Step() {
    for (torch::Tensor& p : params_) p.mutable_grad() = torch::Tensor();
    torch::Tensor loss;
    {
      AutocastScope autocast(device_, amp_);
      loss = ComputeLoss(loss_kind_, model_.forward(images_), labels_, label_smoothing_);
    }
    loss.backward();
    std::vector<torch::Tensor> grads;
    for (const torch::Tensor& p : params_) grads.push_back(p.grad());
    if (clip_grad_norm_ > 0) ClipGradients(grads);
    constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
    // The fused kernels read the step count but do not advance it (torch.optim does it first).
    at::_foreach_add_(steps_, 1);
    if (adamw_) {
      at::_fused_adamw_(params_, grads, exp_avgs_, exp_avg_sqs_, {}, steps_, lr_, kBeta1, kBeta2,
                        weight_decay_, kEps, false, false);
    } else {
      at::_fused_adam_(params_, grads, exp_avgs_, exp_avg_sqs_, {}, steps_, lr_, kBeta1, kBeta2,
                       weight_decay_, kEps, false, false);
    }
    loss_.copy_(loss.detach());
  }

  // torch::nn::utils::clip_grad_norm_'s arithmetic (scale by max_norm / (norm + 1e-6), at most
  // 1) without its host read of the norm, which a graph cannot capture.
  void ClipGradients(const std::vector<torch::Tensor>& grads) {
    torch::NoGradGuard no_grad;
    const torch::Tensor total = torch::stack(at::_foreach_norm(grads, 2)).norm();
    const torch::Tensor scale = (clip_grad_norm_ / (total + 1e-6)).clamp_max(1.0);
    for (const torch::Tensor& g : grads) g.mul_(scale);
  }

  torch::nn::AnyModule model_;
  torch::optim::Optimizer& optimizer_;
  const torch::Device device_;
  const std::string amp_;
  const LossKind loss_kind_;
  const double label_smoothing_;
  const double clip_grad_norm_;
  const bool adamw_;
  double learning_rate_;  // what lr_ holds
  const double weight_decay_;
  torch::Tensor images_, labels_, loss_, lr_;
  std::vector<torch::Tensor> params_, exp_avgs_, exp_avg_sqs_, steps_;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
};

}  // namespace
#endif

bool CudaGraphTrainStep::Available() {
#ifdef TRAIND_HAVE_CUDA_GRAPHS
  return true;
#else
  return false;
#endif
}

absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> CudaGraphTrainStep::Create(
    torch::nn::AnyModule model, torch::optim::Optimizer& optimizer,
    const trainer::v1::JobSpec& spec, const torch::Device& device, int64_t batch_size,
    const torch::Tensor& sample, const torch::Tensor& label_sample) {
#ifdef TRAIND_HAVE_CUDA_GRAPHS
  if (!device.is_cuda()) {
    return absl::InvalidArgumentError("cuda_graph: only on cuda devices");
  }
  auto step = std::make_unique<GraphStep>(std::move(model), optimizer, spec, device);
  if (absl::Status s = step->Capture(batch_size, sample, label_sample); !s.ok()) return s;
  return std::unique_ptr<CudaGraphTrainStep>(std::move(step));
#else
  (void)model, (void)optimizer, (void)spec, (void)device, (void)batch_size, (void)sample,
      (void)label_sample;
  return absl::UnimplementedError(
      "cuda_graph: this traind was built without CUDA graphs (needs LibTorch 2.x with CUDA)");
#endif
}

}  // namespace traind
