// A small built-in job on the first images of the real Fashion-MNIST files, for tests that train
// (a second or two on the CPU): the model `model`, 1,280 training and 500 test images, batch 64,
// 2 epochs, a step report every 3 batches, defaults applied.
#ifndef TRAIND_COMMON_SMALL_SPEC_FOR_TESTS_H_
#define TRAIND_COMMON_SMALL_SPEC_FOR_TESTS_H_

#include <string>

#include "common/job_spec.h"
#include "common/paths.h"

namespace traind {

inline trainer::v1::JobSpec SmallSpecForTests(const std::string& model) {
  trainer::v1::JobSpec spec;
  spec.set_model(model);
  spec.set_dataset("fashion-mnist");
  spec.set_data_dir(DefaultFashionMnistDir());
  spec.set_device("cpu");
  spec.set_limit_train(1280);
  spec.set_limit_test(500);
  spec.set_log_every(3);
  spec.set_batch_size(64);
  spec.set_epochs(2);
  ApplyDefaults(&spec);
  return spec;
}

}  // namespace traind

#endif  // TRAIND_COMMON_SMALL_SPEC_FOR_TESTS_H_
