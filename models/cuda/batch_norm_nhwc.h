// Training-mode batch norm for bf16 or fp32 activations in channels_last (NHWC) layout on CUDA,
// with fp32 parameters and running statistics. bf16 is the case PyTorch sends to its own slower
// kernels, because cuDNN refuses bf16 batch norm (CUDNN_STATUS_NOT_SUPPORTED on the H200,
// docs/benchmarks-history.md); in fp32 cuDNN takes it, and what these kernels add is the ReLU, and
// a ResNet block's residual add before it, in the same passes (forward and backward), which PyTorch
// runs as passes of their own. Forward: per-channel Welford statistics in one pass, then one
// scale-and-shift pass (with an optional residual add and ReLU, or a ReLU and a max pool);
// backward: one pass for the two per-channel sums, one for the input gradient; each thread takes
// eight channels (16 bytes of bf16, 32 of fp32). Compiled only where nvcc is found
// (TRAIND_HAVE_CUDA_KERNELS).
#ifndef TRAIND_MODELS_CUDA_BATCH_NORM_NHWC_H_
#define TRAIND_MODELS_CUDA_BATCH_NORM_NHWC_H_

#include <ATen/core/Tensor.h>

#include "models/cuda/max_pool_nhwc.h"

namespace traind {

// Whether the kernels below take this input: CUDA, bf16 or fp32, 4-d channels_last, channels a
// multiple of 8 and 16-byte aligned data, more than one value per channel.
bool NhwcBatchNormSupports(const at::Tensor& input);

struct NhwcBatchNormForwardResult {
  at::Tensor output;  // the input's type, channels_last
  at::Tensor mean;    // [C] fp32, this batch's
  at::Tensor invstd;  // [C] fp32, 1 / sqrt(biased variance + eps)
  at::Tensor scale;   // [C] fp32, weight * invstd
  at::Tensor shift;   // [C] fp32, bias - mean * scale
  at::Tensor picks;   // NhwcBatchNormReluMaxPoolForward's: the pool's, as MaxPoolNhwcForward's
};

// `weight`, `bias`: [C] fp32. `running_mean`, `running_var`: [C] fp32, updated in place with
// `momentum` (the running variance takes the unbiased batch variance, as PyTorch does). `relu`
// applies max(., 0) to the output in the same pass (a NaN stays NaN, as with torch.relu). A
// defined `residual` (like `input`; only with `relu`) is added before the ReLU, the end of a
// ResNet block: relu(batch_norm(input) + residual) in the one output pass.
NhwcBatchNormForwardResult NhwcBatchNormForward(const at::Tensor& input, const at::Tensor& weight,
                                                const at::Tensor& bias, at::Tensor& running_mean,
                                                at::Tensor& running_var, double momentum,
                                                double eps, bool relu,
                                                const at::Tensor& residual = at::Tensor());

// Whether NhwcBatchNormReluMaxPool* take this input and pooling: what NhwcBatchNormSupports and
// MaxPoolNhwcSupports take, with fewer than 2^31 pixels, stride 2 and windows at most 4 wide (the
// backward's tiles of 2 x 2 pixels then meet at most 2 x 2 windows: ResNet's 3x3, stride-2 stem
// pool among them).
bool NhwcBatchNormReluMaxPoolSupports(const at::Tensor& input, const MaxPoolGeometry& pool);

// max_pool2d(relu(batch_norm(input))), a ResNet stem's end, with the pooling done in the output
// pass: each window reads the normalised input and only the pooled output (and its picks) is
// written, never the full-size activation. Output and picks are bit for bit those of
// NhwcBatchNormForward with `relu` followed by MaxPoolNhwcForward (the values are rounded to the
// input's type before the window compares them, as the stored activation would be).
NhwcBatchNormForwardResult NhwcBatchNormReluMaxPoolForward(const at::Tensor& input,
                                                           const at::Tensor& weight,
                                                           const at::Tensor& bias,
                                                           at::Tensor& running_mean,
                                                           at::Tensor& running_var, double momentum,
                                                           double eps, const MaxPoolGeometry& pool);

struct NhwcBatchNormBackwardResult {
  at::Tensor grad_input;     // the input's type, channels_last
  at::Tensor grad_weight;    // [C] fp32
  at::Tensor grad_bias;      // [C] fp32
  at::Tensor grad_residual;  // with the forward's output only: the input's type, channels_last
};

// `mean` ... `shift` and `relu` as the forward pass returned and took them; with `relu` the
// gradient is masked where the forward's output was zero (recomputed from the input). scale and
// shift are the forward's own values, not recomputed from weight and bias, so that the mask is
// the forward's bit for bit; they cost 8 bytes a channel. For a forward that added a residual,
// pass its `output`: the mask is then read from it (the residual is not kept) and the masked
// gradient is also `grad_residual`. A defined `twin_grad` (like `grad_output`; with `output` only,
// a block's end) is the gradient of a second use of the same output (a ResNet block's output
// feeds the next block's convolution and its shortcut): it is added to grad_output as the pass
// loads it, rounded to the data's type as autograd's own addition of the two would store it,
// which saves that addition's pass.
NhwcBatchNormBackwardResult NhwcBatchNormBackward(const at::Tensor& grad_output,
                                                  const at::Tensor& input, const at::Tensor& weight,
                                                  const at::Tensor& mean, const at::Tensor& invstd,
                                                  const at::Tensor& scale, const at::Tensor& shift,
                                                  bool relu,
                                                  const at::Tensor& output = at::Tensor(),
                                                  const at::Tensor& twin_grad = at::Tensor());

// The backward of NhwcBatchNormReluMaxPoolForward from the pooled output's gradient and the
// forward's picks: both of its passes gather the pool's input gradient through the picks (as
// MaxPoolNhwcBackward would store it), a tile of 2 x 2 input pixels reading its windows once, and
// mask it by the ReLU. No full-size gradient is stored: the pooled gradient and its picks are a
// quarter and a sixteenth of its bytes (fp32), and there is no pass of the pool's own.
// `twin_grad` as in NhwcBatchNormBackward, for the pooled output.
NhwcBatchNormBackwardResult NhwcBatchNormReluMaxPoolBackward(
    const at::Tensor& grad_output, const at::Tensor& picks, const at::Tensor& input,
    const at::Tensor& weight, const at::Tensor& mean, const at::Tensor& invstd,
    const at::Tensor& scale, const at::Tensor& shift, const MaxPoolGeometry& pool,
    const at::Tensor& twin_grad = at::Tensor());

}  // namespace traind

#endif  // TRAIND_MODELS_CUDA_BATCH_NORM_NHWC_H_
