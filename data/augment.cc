#include "data/augment.h"

namespace traind {

torch::Tensor Augment(const torch::Tensor& images, const Augmentation& augmentation,
                      torch::Generator& rng) {
  torch::Tensor out = images;
  const int64_t n = images.size(0), h = images.size(2), w = images.size(3);
  if (augmentation.crop_padding > 0) {
    const int64_t pad = augmentation.crop_padding;
    // Zero padding as torchvision's RandomCrop(padding=pad); one gather per image row/column
    // would be faster, but the batch loop is dwarfed by the model's own work.
    torch::Tensor padded = torch::constant_pad_nd(images, {pad, pad, pad, pad}, 0);
    torch::Tensor dy = torch::randint(2 * pad + 1, {n}, rng).to(torch::kCPU);
    torch::Tensor dx = torch::randint(2 * pad + 1, {n}, rng).to(torch::kCPU);
    auto y = dy.accessor<int64_t, 1>();
    auto x = dx.accessor<int64_t, 1>();
    std::vector<torch::Tensor> crops;
    crops.reserve(n);
    for (int64_t i = 0; i < n; ++i) {
      crops.push_back(padded[i].slice(1, y[i], y[i] + h).slice(2, x[i], x[i] + w));
    }
    out = torch::stack(crops);
  }
  if (augmentation.horizontal_flip) {
    torch::Tensor flip = torch::rand({n}, rng).lt(0.5).to(out.device());
    out = torch::where(flip.view({n, 1, 1, 1}), out.flip({3}), out);
  }
  return out;
}

}  // namespace traind
