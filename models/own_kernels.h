// Whether traind's own kernels run where they apply: the CUDA ones (models/cuda/) where they were
// built in (nvcc was found), the CPU ones (models/cpu/) always; TRAIND_NATIVE_KERNELS=1 in the
// worker's environment turns both off, which bench/own_kernels.sh uses to compare them with
// PyTorch's side by side.
#ifndef TRAIND_MODELS_OWN_KERNELS_H_
#define TRAIND_MODELS_OWN_KERNELS_H_

namespace traind {

bool OwnCudaKernelsEnabled();
bool OwnCpuKernelsEnabled();

}  // namespace traind

#endif  // TRAIND_MODELS_OWN_KERNELS_H_
