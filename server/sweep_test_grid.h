// The sweep tests' grid: 2 models x 2 devices x 2 thread counts, repeated twice (16 members).
#ifndef TRAIND_SERVER_SWEEP_TEST_GRID_H_
#define TRAIND_SERVER_SWEEP_TEST_GRID_H_

#include "trainer/v1/trainer.pb.h"

namespace traind {

inline trainer::v1::SweepSpec Grid() {
  trainer::v1::SweepSpec spec;
  spec.mutable_base()->set_dataset("fashion-mnist");
  spec.mutable_base()->set_epochs(1);
  auto* models = spec.add_axes();
  models->set_field("model");
  models->add_values("lenet5");
  models->add_values("mlp");
  auto* devices = spec.add_axes();
  devices->set_field("device");
  devices->add_values("cpu");
  devices->add_values("cuda");
  auto* threads = spec.add_axes();
  threads->set_field("threads");  // camelCase and snake_case both work
  threads->add_values("1");
  threads->add_values("2");
  spec.set_repeat(2);
  return spec;
}

}  // namespace traind

#endif  // TRAIND_SERVER_SWEEP_TEST_GRID_H_
