#include "engine/cuda_graph_step.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

#if defined(TRAIND_HAVE_CUDA) && TORCH_VERSION_MAJOR >= 2
#define TRAIND_HAVE_CUDA_GRAPHS 1
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "engine/loss.h"
#include "engine/mixed_precision.h"
#include "engine/optimizer_factory.h"
#include "models/model_factory.h"
#ifdef TRAIND_HAVE_CUDA_KERNELS
#include "engine/cuda/master_weight_adam.h"
#endif
#endif

namespace traind {

#ifdef TRAIND_HAVE_CUDA_GRAPHS
namespace {

// The parameters autocast casts to bf16 in every forward pass: conv and linear weights and
// biases. (Batch norm's stay fp32: traind's and ATen's kernels take them so.)
std::vector<torch::Tensor> AutocastCastParameters(torch::nn::Module& model) {
  std::vector<torch::Tensor> out;
  auto add = [&](const torch::Tensor& t) {
    if (t.defined() && t.requires_grad()) out.push_back(t);
  };
  for (const auto& module : model.modules(/*include_self=*/true)) {
    if (auto* conv = module->as<torch::nn::Conv2d>()) {
      add(conv->weight), add(conv->bias);
    } else if (auto* linear = module->as<torch::nn::Linear>()) {
      add(linear->weight), add(linear->bias);
    }
  }
  return out;
}

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
                       const torch::Tensor& label_sample, bool bf16_weight_copies) {
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
    params_ = TrainableParameters(*model_.ptr());
    absl::StatusOr<AdamStateTensors> state = AdamStateOf(optimizer_, params_);
    if (!state.ok()) return state.status();
    exp_avgs_ = state->exp_avgs;
    exp_avg_sqs_ = state->exp_avg_sqs;
    for (int64_t count : state->steps) {
      steps_.push_back(torch::full({}, static_cast<double>(count), floats));
    }
    if (bf16_weight_copies && amp_ == "bf16") ChooseCopies();
    for (size_t i = 0, next = 0; i < params_.size(); ++i) {
      if (next < copies_.size() && copies_[next].index == i) {
        ++next;
      } else {
        fused_.push_back(i);
      }
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
      UseCopies(false);
      auto params = model_.ptr()->parameters();
      for (size_t i = 0; i < params.size(); ++i) params[i].copy_(saved[i]);
      auto buffers = model_.ptr()->buffers();
      for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(saved_buffers[i]);
      size_t next = 0;
      for (auto* list : {&exp_avgs_, &exp_avg_sqs_, &steps_}) {
        for (auto& t : *list) t.copy_(saved_state[next++]);
      }
      for (const Copy& c : copies_) c.bf16.copy_(c.master);
      torch::cuda::synchronize(device_.index());
    };

    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, device_.index());
    side.synchronize();
    bool capturing = false;
    try {
      c10::cuda::CUDAStreamGuard guard(side);
      UseCopies(true);
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

  int64_t bf16_copied_tensors() const override { return static_cast<int64_t>(copies_.size()); }
  int64_t bf16_copied_elements() const override {
    int64_t n = 0;
    for (const Copy& c : copies_) n += c.master.numel();
    return n;
  }

 private:
  // A parameter that trains through a bf16 copy. `master` is the parameter's own fp32 data (the
  // model's, what evaluation and checkpoints read), `bf16` the copy the graph's forward reads.
  struct Copy {
    size_t index;  // into params_
    torch::Tensor master, bf16;
  };

  // Which parameters get a copy: those autocast would cast, where the update kernel takes their
  // layout (a gradient has its parameter's strides; the moments were made like it).
  void ChooseCopies() {
#ifdef TRAIND_HAVE_CUDA_KERNELS
    std::vector<torch::Tensor> cast = AutocastCastParameters(*model_.ptr());
    for (size_t i = 0; i < params_.size(); ++i) {
      const torch::Tensor& p = params_[i];
      bool found = false;
      for (const torch::Tensor& t : cast) found = found || t.is_same(p);
      if (!found || p.scalar_type() != torch::kFloat32) continue;
      torch::Tensor bf16 = p.detach().to(torch::kBFloat16);  // strides preserved
      if (!MasterWeightAdamSupports(p.detach(), bf16, exp_avgs_[i], exp_avg_sqs_[i], bf16)) {
        continue;
      }
      copies_.push_back(Copy{i, p.detach(), std::move(bf16)});
    }
#endif
  }

  // Points each copied parameter at its bf16 copy (true) or back at its fp32 data (false). The
  // graph records the addresses, so replays keep reading the copies and writing the fp32 data
  // whichever the parameter points at; between replays it is the fp32 data. The parameter's
  // bf16 gradient is left out of the fp32 parameter (the graph's pool keeps its memory).
  void UseCopies(bool bf16) {
    for (const Copy& c : copies_) {
      torch::Tensor& p = params_[c.index];
      if (!bf16) p.mutable_grad() = torch::Tensor();
      p.set_data(bf16 ? c.bf16 : c.master);
    }
  }

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
    grads_.clear();
    for (const torch::Tensor& p : params_) grads_.push_back(p.grad());
    // Copied parameters' gradients are bf16: the update kernel scales them as it reads them.
    const torch::Tensor clip_factor = clip_grad_norm_ > 0 ? ClipGradients() : torch::Tensor();
    constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
    // The fused kernels read the step count but do not advance it (torch.optim does it first).
    at::_foreach_add_(steps_, 1);
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
    for (size_t i : fused_) {
      params.push_back(params_[i]), grads.push_back(grads_[i]), exp_avgs.push_back(exp_avgs_[i]);
      exp_avg_sqs.push_back(exp_avg_sqs_[i]), steps.push_back(steps_[i]);
    }
    if (!params.empty() && adamw_) {
      at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, lr_, kBeta1, kBeta2,
                        weight_decay_, kEps, false, false);
    } else if (!params.empty()) {
      at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, lr_, kBeta1, kBeta2,
                       weight_decay_, kEps, false, false);
    }
#ifdef TRAIND_HAVE_CUDA_KERNELS
    const AdamHyperparameters hyper{kBeta1, kBeta2, kEps, weight_decay_, adamw_};
    for (const Copy& c : copies_) {
      MasterWeightAdamStep(c.master, grads_[c.index], exp_avgs_[c.index], exp_avg_sqs_[c.index],
                           c.bf16, steps_[c.index], lr_, clip_factor, hyper);
    }
#endif
    loss_.copy_(loss.detach());
  }

  // torch::nn::utils::clip_grad_norm_'s arithmetic (scale by max_norm / (norm + 1e-6), at most
  // 1) without its host read of the norm, which a graph cannot capture. Scales the fp32
  // gradients in place and returns the factor ([] fp32) for the bf16 ones. Norms are taken in
  // fp32 either way.
  torch::Tensor ClipGradients() {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> fp32, bf16;
    for (size_t i : fused_) fp32.push_back(grads_[i]);
    for (const Copy& c : copies_) bf16.push_back(grads_[c.index]);
    // A foreach op refuses an empty list: a model of convs and linears alone has no fp32 ones.
    std::vector<torch::Tensor> norms;
    if (!fp32.empty()) norms = at::_foreach_norm(fp32, 2);
    if (!bf16.empty()) {
      for (torch::Tensor& n : at::_foreach_norm(bf16, 2, torch::kFloat32)) norms.push_back(n);
    }
    const torch::Tensor total = torch::stack(norms).norm();
    const torch::Tensor scale = (clip_grad_norm_ / (total + 1e-6)).clamp_max(1.0);
    for (const torch::Tensor& g : fp32) g.mul_(scale);
    return scale;
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
  // The last step's gradients; after capture, the graph's (its replays write them).
  std::vector<torch::Tensor> grads_;
  std::vector<Copy> copies_;   // in params_ order
  std::vector<size_t> fused_;  // the parameters ATen's fused kernel updates: all but the copied
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
};

}  // namespace
#endif

bool CudaGraphTrainStep::Bf16WeightCopiesWanted() {
  const char* value = std::getenv("TRAIND_BF16_WEIGHT_COPIES");
  return value == nullptr || std::strcmp(value, "0") != 0;
}

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
    const torch::Tensor& sample, const torch::Tensor& label_sample, bool bf16_weight_copies) {
#ifdef TRAIND_HAVE_CUDA_GRAPHS
  if (!device.is_cuda()) {
    return absl::InvalidArgumentError("cuda_graph: only on cuda devices");
  }
  auto step = std::make_unique<GraphStep>(std::move(model), optimizer, spec, device);
  if (absl::Status s = step->Capture(batch_size, sample, label_sample, bf16_weight_copies);
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<CudaGraphTrainStep>(std::move(step));
#else
  (void)model, (void)optimizer, (void)spec, (void)device, (void)batch_size, (void)sample,
      (void)label_sample, (void)bf16_weight_copies;
  return absl::UnimplementedError(
      "cuda_graph: this traind was built without CUDA graphs (needs LibTorch 2.x with CUDA)");
#endif
}

}  // namespace traind
