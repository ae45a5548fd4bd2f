// Whether traind's own CUDA kernels (models/cuda/) run where they apply: built in (nvcc was found)
// and not turned off with TRAIND_NATIVE_KERNELS=1 in the worker's environment, which
// bench/own_kernels.sh uses to compare them with PyTorch's side by side.
#ifndef TRAIND_MODELS_OWN_KERNELS_H_
#define TRAIND_MODELS_OWN_KERNELS_H_

namespace traind {

bool OwnCudaKernelsEnabled();

}  // namespace traind

#endif  // TRAIND_MODELS_OWN_KERNELS_H_
