// The JobSpec flags shared by `submit`, `bench train` and (later) `sweep`: one place that maps
// command-line flags onto JobSpec fields. Flags the user did not give leave the field alone.
#ifndef TRAIND_CLIENT_SPEC_FLAGS_H_
#define TRAIND_CLIENT_SPEC_FLAGS_H_

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct SpecFlags {
  std::string model, dataset, data_dir, device, optimizer, name, amp, tf32, batch_size;
  int epochs = 0, limit_train = 0, limit_test = 0, log_every = 0, threads = 0, accumulate = 0,
      eval_every = 0, checkpoint_every = 0, image_size = 0, num_samples = 0, channels = 0,
      classes = 0, random_crop = 0, profile_steps = 0;
  double lr = 0, momentum = 0, weight_decay = 0;
  uint64_t seed = 0;
  bool nesterov = false, hflip = false, device_resident = false, cifar_stem = false,
       cuda_graph = false;
  CLI::App* app = nullptr;
};

// `training`: add the training-loop flags too (not only model, data and device).
void AddSpecFlags(CLI::App* app, SpecFlags* flags, bool training = true);

// Applies the given flags to `spec`, makes data_dir absolute, and validates the result as the
// daemon will (INVALID_ARGUMENT naming the field).
absl::Status ApplySpecFlags(const SpecFlags& flags, trainer::v1::JobSpec* spec);

}  // namespace traind

#endif  // TRAIND_CLIENT_SPEC_FLAGS_H_
