// The fp16 gradient scaler's checkpoint round trip (its arithmetic runs on CUDA jobs only).
#include "engine/mixed_precision.h"

#include <sstream>

#include "gtest/gtest.h"

namespace traind {
namespace {

// Writes `scaler` to an archive and reads the archive back, as a checkpoint does.
torch::serialize::InputArchive RoundTrip(const GradScaler& scaler) {
  torch::serialize::OutputArchive archive;
  archive.write("epoch", torch::tensor(int64_t{3}));
  scaler.Save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  std::istringstream in(bytes.str());
  torch::serialize::InputArchive loaded;
  loaded.load_from(in);
  return loaded;
}

TEST(GradScalerTest, ScaleSurvivesACheckpoint) {
  GradScaler saved(torch::kCPU, /*enabled=*/true);
  saved.scale().fill_(1024.0);  // as after six overflows
  torch::serialize::InputArchive archive = RoundTrip(saved);
  GradScaler resumed(torch::kCPU, /*enabled=*/true);
  EXPECT_EQ(resumed.scale().item<float>(), 65536.0f);
  resumed.Load(archive);
  EXPECT_EQ(resumed.scale().item<float>(), 1024.0f);
  torch::Tensor growth;
  EXPECT_TRUE(archive.try_read("grad_scaler_growth", growth));
}

TEST(GradScalerTest, AnArchiveWithoutItKeepsTheInitialScaleAndDisabledWritesNothing) {
  const GradScaler disabled(torch::kCPU, /*enabled=*/false);
  torch::serialize::InputArchive archive = RoundTrip(disabled);
  torch::Tensor scale;
  EXPECT_FALSE(archive.try_read("grad_scaler_scale", scale));
  GradScaler resumed(torch::kCPU, /*enabled=*/true);
  resumed.Load(archive);  // a checkpoint from before, or of a job without fp16
  EXPECT_EQ(resumed.scale().item<float>(), 65536.0f);
}

}  // namespace
}  // namespace traind
