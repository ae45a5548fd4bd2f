#include "models/optimizer_factory.h"

#include <cmath>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "absl/strings/str_cat.h"

#if defined(TRAIND_HAVE_CUDA) && TORCH_VERSION_MAJOR >= 2
#define TRAIND_HAVE_FUSED_ADAM 1
#endif

namespace traind {

namespace {

namespace optim = torch::optim;

// The key of a parameter in Optimizer::state_: its TensorImpl*, which LibTorch 1.x spells as a
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

// `t` with the strides of `p` (a copy when they differ): the fused kernel walks all its lists as
// flat memory, so every gradient and moment must be laid out like its parameter.
torch::Tensor LikeParameter(const torch::Tensor& t, const torch::Tensor& p) {
  if (t.strides() == p.strides()) return t;
  return torch::empty_like(p, torch::MemoryFormat::Preserve).copy_(t);
}

template <class Base, class Options, class State, bool kDecoupled>
class FusedAdam final : public Base {
 public:
  FusedAdam(std::vector<torch::Tensor> parameters, Options options)
      : Base(std::move(parameters), options) {}

  torch::Tensor step(optim::Optimizer::LossClosure closure = nullptr) override {
    torch::NoGradGuard no_grad;
    torch::Tensor loss;
    if (closure != nullptr) {
      at::AutoGradMode enable_grad(true);
      loss = closure();
    }
    for (auto& group : this->param_groups_) {
      const auto& options = static_cast<const Options&>(group.options());
      if (options.amsgrad()) return Base::step();  // not needed by any job; keep LibTorch's
      std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
      for (const torch::Tensor& p : group.params()) {
        if (!p.grad().defined()) continue;
        TORCH_CHECK(!p.grad().is_sparse(), "Adam does not support sparse gradients");
        auto& slot = this->state_[StateKey(this->state_, p)];
        if (!slot) {
          auto state = std::make_unique<State>();
          state->step(0);
          state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
          state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
          slot = std::move(state);
        }
        auto& state = static_cast<State&>(*slot);
        state.step(state.step() + 1);  // the host count, which checkpoints save
        state.exp_avg(LikeParameter(state.exp_avg(), p));
        state.exp_avg_sq(LikeParameter(state.exp_avg_sq(), p));
        params.push_back(p);
        grads.push_back(LikeParameter(p.grad(), p));
        exp_avgs.push_back(state.exp_avg());
        exp_avg_sqs.push_back(state.exp_avg_sq());
      }
      if (params.empty()) continue;
      const double beta1 = std::get<0>(options.betas());
      const double beta2 = std::get<1>(options.betas());
#ifdef TRAIND_HAVE_FUSED_ADAM
      if (params[0].is_cuda()) {
        // The kernels read step counts from device tensors (so that they can run inside a CUDA
        // graph) and do not advance them: kept here, made from the host count when first seen
        // (after a checkpoint is loaded too), advanced by one multi-tensor add.
        std::vector<torch::Tensor> steps;
        for (size_t i = 0; i < params.size(); ++i) {
          torch::Tensor& s = steps_[params[i].unsafeGetTensorImpl()];
          if (!s.defined()) {
            const auto& state = static_cast<const State&>(*this->state_[StateKey(this->state_, params[i])]);
            s = torch::full({}, static_cast<double>(state.step() - 1),
                            torch::TensorOptions().dtype(torch::kFloat32).device(params[i].device()));
          }
          steps.push_back(s);
        }
        at::_foreach_add_(steps, 1);
        if (kDecoupled) {
          at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, options.lr(), beta1,
                            beta2, options.weight_decay(), options.eps(), false, false);
        } else {
          at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, options.lr(), beta1,
                           beta2, options.weight_decay(), options.eps(), false, false);
        }
        continue;
      }
#endif
      // The same update, tensor by tensor.
      for (size_t i = 0; i < params.size(); ++i) {
        const auto& state = static_cast<const State&>(*this->state_[StateKey(this->state_, params[i])]);
        const double bias1 = 1 - std::pow(beta1, static_cast<double>(state.step()));
        const double bias2 = 1 - std::pow(beta2, static_cast<double>(state.step()));
        torch::Tensor grad = grads[i];
        if (kDecoupled) {
          params[i].mul_(1 - options.lr() * options.weight_decay());
        } else if (options.weight_decay() != 0) {
          grad = grad.add(params[i], options.weight_decay());
        }
        exp_avgs[i].mul_(beta1).add_(grad, 1 - beta1);
        exp_avg_sqs[i].mul_(beta2).addcmul_(grad, grad, 1 - beta2);
        torch::Tensor denom = (exp_avg_sqs[i].sqrt() / std::sqrt(bias2)).add_(options.eps());
        params[i].addcdiv_(exp_avgs[i], denom, -options.lr() / bias1);
      }
    }
    return loss;
  }

  void load(torch::serialize::InputArchive& archive) override {
    Base::load(archive);
    steps_.clear();  // rebuilt from the loaded host counts
  }

 private:
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

std::unique_ptr<optim::Optimizer> CreateFusedAdam(std::vector<torch::Tensor> parameters, double lr,
                                                  double weight_decay, bool decoupled) {
  if (decoupled) {
    return std::make_unique<FusedAdam<optim::AdamW, optim::AdamWOptions, optim::AdamWParamState, true>>(
        std::move(parameters), optim::AdamWOptions(lr).weight_decay(weight_decay));
  }
  return std::make_unique<FusedAdam<optim::Adam, optim::AdamOptions, optim::AdamParamState, false>>(
      std::move(parameters), optim::AdamOptions(lr).weight_decay(weight_decay));
}

absl::StatusOr<std::unique_ptr<optim::Optimizer>> CreateOptimizer(
    const trainer::v1::JobSpec& spec, std::vector<torch::Tensor> parameters) {
  const double lr = spec.learning_rate();
  if (spec.optimizer() == "adam" || spec.optimizer() == "adamw") {
    const bool decoupled = spec.optimizer() == "adamw";
    const double weight_decay =
        decoupled && !spec.has_weight_decay() ? 1e-2 : spec.weight_decay();
    if (FusedAdamAvailable(parameters)) {
      return CreateFusedAdam(std::move(parameters), lr, weight_decay, decoupled);
    }
    if (decoupled) {
      return std::make_unique<optim::AdamW>(std::move(parameters),
                                            optim::AdamWOptions(lr).weight_decay(weight_decay));
    }
    return std::make_unique<optim::Adam>(std::move(parameters),
                                         optim::AdamOptions(lr).weight_decay(weight_decay));
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
