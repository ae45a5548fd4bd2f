#include "models/own_kernels.h"

#include <cstdlib>
#include <cstring>

namespace traind {

namespace {

bool NativeKernelsAsked() {
  static const bool asked = [] {
    const char* value = std::getenv("TRAIND_NATIVE_KERNELS");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return asked;
}

}  // namespace

bool OwnCudaKernelsEnabled() {
#ifdef TRAIND_HAVE_CUDA_KERNELS
  return !NativeKernelsAsked();
#else
  return false;
#endif
}

bool OwnCpuKernelsEnabled() { return !NativeKernelsAsked(); }

}  // namespace traind
