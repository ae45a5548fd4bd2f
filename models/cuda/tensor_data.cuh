// A tensor's storage as a kernel's element type (float or __nv_bfloat16, which ATen's data_ptr<T>
// does not name), for traind's CUDA kernels (models/cuda/*.cu only).
#ifndef TRAIND_MODELS_CUDA_TENSOR_DATA_CUH_
#define TRAIND_MODELS_CUDA_TENSOR_DATA_CUH_

#include <ATen/core/Tensor.h>

namespace traind {

template <typename T>
const T* Data(const at::Tensor& t) {
  return reinterpret_cast<const T*>(t.data_ptr());
}

template <typename T>
T* MutableData(at::Tensor& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

}  // namespace traind

#endif  // TRAIND_MODELS_CUDA_TENSOR_DATA_CUH_
