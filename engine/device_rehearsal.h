// A warm worker's rehearsal of a training step on its GPU. CUDA loads a kernel's module at the
// kernel's first launch (lazy loading, the default since CUDA 12), so a job's first step paid for
// every module its forward, loss, backward, optimizer and evaluation touch: most of the 0.13-0.16 s
// that LeNet5's CUDA graph capture took on the H200. A worker waiting for a job pays it instead.
#ifndef TRAIND_ENGINE_DEVICE_REHEARSAL_H_
#define TRAIND_ENGINE_DEVICE_REHEARSAL_H_

#include <torch/torch.h>

namespace traind {

// On a CUDA device (elsewhere it does nothing): converts a few byte images as the dataset does,
// trains a small convolutional network (convolutions, batch norm, tanh and ReLU, max pooling,
// linear layers, cross-entropy) for two steps with the fused Adam, the second captured in a CUDA
// graph and replayed, and evaluates it. Leaves nothing a job sees but the loaded kernels and the
// allocator's cached blocks: a job seeds the generators itself.
void RehearseTrainingStep(const torch::Device& device);

}  // namespace traind

#endif  // TRAIND_ENGINE_DEVICE_REHEARSAL_H_
