// Training-time augmentation of a batch already on its device: random crop with padding and
// random horizontal flip, per image, driven by a seeded CPU generator so runs repeat.
#ifndef TRAIND_DATA_AUGMENT_H_
#define TRAIND_DATA_AUGMENT_H_

#include <torch/torch.h>

namespace traind {

struct Augmentation {
  int64_t crop_padding = 0;  // 0: no crop
  bool horizontal_flip = false;
  bool enabled() const { return crop_padding > 0 || horizontal_flip; }
};

// images: [N, C, H, W]. Returns a new tensor of the same shape.
torch::Tensor Augment(const torch::Tensor& images, const Augmentation& augmentation,
                      torch::Generator& rng);

}  // namespace traind

#endif  // TRAIND_DATA_AUGMENT_H_
