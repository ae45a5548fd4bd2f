#include "engine/optimizer_factory.h"

#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "engine/cpu/adam_step.h"
#include "models/own_kernels.h"

#if defined(TRAIND_HAVE_CUDA) && TORCH_VERSION_MAJOR >= 2
#define TRAIND_HAVE_FUSED_ADAM 1
#endif

namespace traind {

namespace {

namespace optim = torch::optim;

// `t` with the strides of `p` (a copy when they differ): the fused kernel walks all its lists as
// flat memory, so every gradient and moment must be laid out like its parameter.
torch::Tensor LikeParameter(const torch::Tensor& t, const torch::Tensor& p) {
  if (t.strides() == p.strides()) return t;
  return torch::empty_like(p, torch::MemoryFormat::Preserve).copy_(t);
}

// `p`'s Adam/AdamW state in `states` (an optimizer's), created zeroed when it has none yet, its
// moments laid out like `p`.
template <class State, class Map>
State& StateFor(Map& states, const torch::Tensor& p) {
  auto& slot = states[StateKey(states, p)];
  if (!slot) {
    auto state = std::make_unique<State>();
    state->step(0);
    state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    slot = std::move(state);
  }
  auto& state = static_cast<State&>(*slot);
  state.exp_avg(LikeParameter(state.exp_avg(), p));
  state.exp_avg_sq(LikeParameter(state.exp_avg_sq(), p));
  return state;
}

// The loss of `closure` (undefined without one), with gradients on, as LibTorch's step() has it.
torch::Tensor EvaluateClosure(const optim::Optimizer::LossClosure& closure) {
  if (closure == nullptr) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
}

// Every parameter CPU fp32 (what AdamStepCpu takes once gradients exist).
bool AllCpuFloat(const std::vector<torch::Tensor>& parameters) {
  for (const torch::Tensor& p : parameters) {
    if (!p.device().is_cpu() || p.scalar_type() != torch::kFloat32) return false;
  }
  return !parameters.empty();
}

// Adam (AdamW) whose step() updates all of a group's parameters with ATen's fused kernel when they
// are CUDA fp32 tensors and this LibTorch has it, and each CPU fp32 parameter in one pass
// (engine/cpu/adam_step.h); otherwise it is LibTorch's Adam, unchanged. The state and
// checkpoints are LibTorch's either way.
template <class Base, class Options, class State, bool kDecoupled>
class FusedAdam final : public Base {
 public:
  FusedAdam(std::vector<torch::Tensor> parameters, Options options)
      : Base(parameters, options),
        fused_(FusedAdamAvailable(parameters) && !options.amsgrad()),
        cpu_(AllCpuFloat(parameters) && !options.amsgrad() && OwnCpuKernelsEnabled()) {}

  torch::Tensor step(optim::Optimizer::LossClosure closure = nullptr) override {
    if (cpu_ && CpuTakesEveryGradient()) return CpuStep(std::move(closure));
    if (!fused_) return Base::step(std::move(closure));
#ifdef TRAIND_HAVE_FUSED_ADAM
    torch::NoGradGuard no_grad;
    const torch::Tensor loss = EvaluateClosure(closure);
    for (auto& group : this->param_groups_) {
      const auto& options = static_cast<const Options&>(group.options());
      std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
      for (const torch::Tensor& p : group.params()) {
        if (!p.grad().defined()) continue;
        TORCH_CHECK(!p.grad().is_sparse(), "Adam does not support sparse gradients");
        State& state = StateFor<State>(this->state_, p);
        // The kernels read step counts from device tensors (so that they can run inside a CUDA
        // graph) and do not advance them: kept here, made from the host count (which checkpoints
        // save) when first seen, after a checkpoint is loaded too.
        torch::Tensor& device_step = steps_[p.unsafeGetTensorImpl()];
        if (!device_step.defined()) {
          device_step =
              torch::full({}, static_cast<double>(state.step()),
                          torch::TensorOptions().dtype(torch::kFloat32).device(p.device()));
        }
        state.step(state.step() + 1);
        params.push_back(p);
        grads.push_back(LikeParameter(p.grad(), p));
        exp_avgs.push_back(state.exp_avg());
        exp_avg_sqs.push_back(state.exp_avg_sq());
        steps.push_back(device_step);
      }
      if (params.empty()) continue;
      at::_foreach_add_(steps, 1);
      const double beta1 = std::get<0>(options.betas());
      const double beta2 = std::get<1>(options.betas());
      if (kDecoupled) {
        at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, options.lr(), beta1,
                          beta2, options.weight_decay(), options.eps(), false, false);
      } else {
        at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, options.lr(), beta1,
                         beta2, options.weight_decay(), options.eps(), false, false);
      }
    }
    return loss;
#else
    return Base::step(std::move(closure));  // unreachable: fused_ is false without the kernel
#endif
  }

  void load(torch::serialize::InputArchive& archive) override {
    Base::load(archive);
    steps_.clear();  // rebuilt from the loaded host counts
  }

 private:
  bool CpuTakesEveryGradient() const {
    for (const auto& group : this->param_groups_) {
      for (const torch::Tensor& p : group.params()) {
        if (p.grad().defined() && !AdamStepCpuSupports(p)) return false;
      }
    }
    return true;
  }

  torch::Tensor CpuStep(optim::Optimizer::LossClosure closure) {
    torch::NoGradGuard no_grad;
    const torch::Tensor loss = EvaluateClosure(closure);
    for (auto& group : this->param_groups_) {
      const auto& options = static_cast<const Options&>(group.options());
      const AdamHyperparameters hyperparameters{
          options.lr(),  std::get<0>(options.betas()), std::get<1>(options.betas()),
          options.eps(), options.weight_decay(),       kDecoupled};
      for (const torch::Tensor& p : group.params()) {
        if (!p.grad().defined()) continue;
        State& state = StateFor<State>(this->state_, p);
        state.step(state.step() + 1);
        AdamStepCpu(p, p.grad(), state.exp_avg(), state.exp_avg_sq(), state.step(),
                    hyperparameters);
      }
    }
    return loss;
  }

  const bool fused_;
  const bool cpu_;
  std::unordered_map<void*, torch::Tensor> steps_;
};

}  // namespace

bool FusedAdamAvailable(const std::vector<torch::Tensor>& parameters) {
#ifdef TRAIND_HAVE_FUSED_ADAM
  if (parameters.empty()) return false;
  for (const torch::Tensor& p : parameters) {
    if (!p.is_cuda() || p.scalar_type() != torch::kFloat32 ||
        p.device() != parameters[0].device()) {
      return false;
    }
  }
  return true;
#else
  (void)parameters;
  return false;
#endif
}

namespace {

template <class State>
AdamStateTensors StateTensors(optim::Optimizer& optimizer,
                              const std::vector<torch::Tensor>& parameters) {
  AdamStateTensors out;
  for (const torch::Tensor& p : parameters) {
    const State& state = StateFor<State>(optimizer.state(), p);
    out.exp_avgs.push_back(state.exp_avg());
    out.exp_avg_sqs.push_back(state.exp_avg_sq());
    out.steps.push_back(state.step());
  }
  return out;
}

template <class State>
void SetSteps(optim::Optimizer& optimizer, const std::vector<torch::Tensor>& parameters,
              const std::vector<int64_t>& steps) {
  auto& states = optimizer.state();
  for (size_t i = 0; i < parameters.size(); ++i) {
    auto& slot = states[StateKey(states, parameters[i])];
    if (slot) static_cast<State&>(*slot).step(steps[i]);
  }
}

}  // namespace

absl::StatusOr<AdamStateTensors> AdamStateOf(optim::Optimizer& optimizer,
                                             const std::vector<torch::Tensor>& parameters) {
  // AdamW derives from neither Adam nor the other way round: ask for each.
  if (dynamic_cast<optim::AdamW*>(&optimizer) != nullptr) {
    return StateTensors<optim::AdamWParamState>(optimizer, parameters);
  }
  if (dynamic_cast<optim::Adam*>(&optimizer) != nullptr) {
    return StateTensors<optim::AdamParamState>(optimizer, parameters);
  }
  return absl::InvalidArgumentError("optimizer: not adam or adamw");
}

absl::Status SetAdamSteps(optim::Optimizer& optimizer, const std::vector<torch::Tensor>& parameters,
                          const std::vector<int64_t>& steps) {
  if (steps.size() != parameters.size()) {
    return absl::InvalidArgumentError("SetAdamSteps: one step count per parameter");
  }
  if (dynamic_cast<optim::AdamW*>(&optimizer) != nullptr) {
    SetSteps<optim::AdamWParamState>(optimizer, parameters, steps);
    return absl::OkStatus();
  }
  if (dynamic_cast<optim::Adam*>(&optimizer) != nullptr) {
    SetSteps<optim::AdamParamState>(optimizer, parameters, steps);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError("optimizer: not adam or adamw");
}

std::unique_ptr<optim::Optimizer> CreateFusedAdam(std::vector<torch::Tensor> parameters, double lr,
                                                  double weight_decay, bool decoupled) {
  if (decoupled) {
    return std::make_unique<
        FusedAdam<optim::AdamW, optim::AdamWOptions, optim::AdamWParamState, true>>(
        std::move(parameters), optim::AdamWOptions(lr).weight_decay(weight_decay));
  }
  return std::make_unique<FusedAdam<optim::Adam, optim::AdamOptions, optim::AdamParamState, false>>(
      std::move(parameters), optim::AdamOptions(lr).weight_decay(weight_decay));
}

bool UsesFusedAdam(const trainer::v1::JobSpec& spec, const std::vector<torch::Tensor>& parameters) {
  return (spec.optimizer() == "adam" || spec.optimizer() == "adamw") &&
         FusedAdamAvailable(parameters);
}

absl::StatusOr<std::unique_ptr<optim::Optimizer>> CreateOptimizer(
    const trainer::v1::JobSpec& spec, std::vector<torch::Tensor> parameters) {
  const double lr = spec.learning_rate();
  if (spec.optimizer() == "adam" || spec.optimizer() == "adamw") {
    const bool decoupled = spec.optimizer() == "adamw";
    const double weight_decay = decoupled && !spec.has_weight_decay() ? 1e-2 : spec.weight_decay();
    // LibTorch's Adam, which steps with the fused kernel where UsesFusedAdam says so.
    return CreateFusedAdam(std::move(parameters), lr, weight_decay, decoupled);
  }
  if (spec.optimizer() == "sgd") {
    return std::make_unique<optim::SGD>(std::move(parameters),
                                        optim::SGDOptions(lr)
                                            .momentum(spec.momentum())
                                            .nesterov(spec.nesterov())
                                            .weight_decay(spec.weight_decay()));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer: unknown value '", spec.optimizer(), "'; allowed: adam, adamw, sgd"));
}

}  // namespace traind
