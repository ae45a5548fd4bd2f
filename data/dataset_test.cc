#include "data/dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <string>

#include "common/temp_dir_for_tests.h"

namespace traind {
namespace {

using trainer::v1::JobSpec;

// CIFAR-10's binary layout, `records` images per file, each file's image r all bytes (r % 11) * 25.
JobSpec WriteCifar10(const std::string& dir, int records) {
  auto write = [&](const std::string& name) {
    std::string bytes;
    for (int r = 0; r < records; ++r) {
      bytes += static_cast<char>(r % 10);
      bytes += std::string(3072, static_cast<char>((r % 11) * 25));
    }
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
  };
  for (int i = 1; i <= 5; ++i) write("data_batch_" + std::to_string(i) + ".bin");
  write("test_batch.bin");
  JobSpec spec;
  spec.set_dataset("cifar10");
  spec.set_data_dir(dir);
  return spec;
}

TEST(DatasetTest, ImagesStayBytesUntilPreparedAndPreparedBytesIsExact) {
  TempDirForTests temp;
  const JobSpec spec = WriteCifar10(temp.path(), 10);
  auto data = ReadDataset(spec, 40);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train.inputs.scalar_type(), torch::kUInt8);
  EXPECT_EQ(data->train.size(), 45);
  EXPECT_EQ(data->validation.size(), 5);
  const int64_t predicted = PreparedBytes(*data, spec, 40);

  PrepareImages(*data, spec, 40, torch::kCPU);
  int64_t actual = 0;
  for (const Split* split : {&data->train, &data->validation, &data->test}) {
    EXPECT_EQ(split->inputs.scalar_type(), torch::kFloat32);
    actual += split->inputs.nbytes() + split->labels.nbytes();
  }
  EXPECT_EQ(predicted, actual);
  EXPECT_EQ(data->train.inputs.sizes(), (std::vector<int64_t>{45, 3, 40, 40}));
  EXPECT_EQ(data->height, 40);
  // Normalize(0.5, 0.5) of ToTensor: byte 0 is -1, byte 225 is 225/255*2-1 (uniform images keep
  // their value through the bilinear resize).
  EXPECT_FLOAT_EQ(data->train.inputs[0].min().item<float>(), -1.0f);
  EXPECT_NEAR(data->train.inputs[9].max().item<float>(), 225.0 / 255.0 * 2 - 1, 1e-6);
}

TEST(DatasetTest, PreparedOnCudaMatchesTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  TempDirForTests temp;
  const JobSpec spec = WriteCifar10(temp.path(), 10);
  auto on_cpu = LoadDataset(spec, 40);
  auto on_gpu = ReadDataset(spec, 40);
  ASSERT_TRUE(on_cpu.ok() && on_gpu.ok());
  PrepareImages(*on_gpu, spec, 40, torch::Device(torch::kCUDA, 0));
  EXPECT_TRUE(on_gpu->train.inputs.is_cuda());
  EXPECT_TRUE(on_gpu->test.labels.is_cuda());
  EXPECT_TRUE(torch::allclose(on_gpu->train.inputs.cpu(), on_cpu->train.inputs, 1e-5, 1e-5));
  EXPECT_TRUE(torch::equal(on_gpu->validation.labels.cpu(), on_cpu->validation.labels));
}

}  // namespace
}  // namespace traind
