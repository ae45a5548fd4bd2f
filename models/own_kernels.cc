#include "models/own_kernels.h"

#include <cstdlib>
#include <cstring>

namespace traind {

bool OwnCudaKernelsEnabled() {
#ifdef TRAIND_HAVE_CUDA_KERNELS
  static const bool enabled = [] {
    const char* value = std::getenv("TRAIND_NATIVE_KERNELS");
    return value == nullptr || std::strcmp(value, "1") != 0;
  }();
  return enabled;
#else
  return false;
#endif
}

}  // namespace traind
