// Debian's libtorch-dev 1.13 ships c10d's reducer.hpp but not the distributed-autograd header it
// includes. The Reducer only names two types from it: DistAutogradContext::GradCallback (checked
// equal to its own std::function) and ContextPtr (a shared_ptr held for RPC training, which traind
// never uses). engine/CMakeLists.txt puts this directory on data_parallel.cc's include path only
// when LibTorch lacks the real header; nothing here is defined or called.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>

namespace torch {
namespace distributed {
namespace autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};
using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace autograd
}  // namespace distributed
}  // namespace torch
