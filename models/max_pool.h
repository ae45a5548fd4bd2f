// The zoo's 2-d max pooling (square windows, dilation 1, floor mode), torch::nn::MaxPool2d's
// results, with traind's own kernels where they apply: NCHW loops on the CPU for non-overlapping
// windows (models/cpu/max_pool_nchw.h), NHWC forward and backward for channels_last fp32 and
// bf16 CUDA inputs (models/cuda/max_pool_nhwc.h); ATen's pooling elsewhere.
#ifndef TRAIND_MODELS_MAX_POOL_H_
#define TRAIND_MODELS_MAX_POOL_H_

#include <torch/torch.h>

#include <ostream>

namespace traind {

class MaxPool2dImpl : public torch::nn::Cloneable<MaxPool2dImpl> {
 public:
  MaxPool2dImpl(int64_t kernel, int64_t stride, int64_t padding = 0)
      : kernel_(kernel), stride_(stride), padding_(padding) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& input);
  int64_t kernel() const { return kernel_; }
  int64_t stride() const { return stride_; }
  int64_t padding() const { return padding_; }

 private:
  int64_t kernel_, stride_, padding_;
};
TORCH_MODULE(MaxPool2d);

}  // namespace traind

#endif  // TRAIND_MODELS_MAX_POOL_H_
