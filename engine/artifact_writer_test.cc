#include "engine/artifact_writer.h"

#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "common/temp_dir_for_tests.h"
#include "engine/artifacts.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

torch::nn::AnyModule SmallModel() {
  torch::manual_seed(1);
  return torch::nn::AnyModule(torch::nn::Linear(4, 3));
}

torch::Tensor Weight(torch::nn::AnyModule& model) {
  return model.ptr()->named_parameters()["weight"].detach().clone();
}

// The file holds the weights as they were when kept, though training goes on changing the model
// (on the CPU too, where a copy to the CPU would be no copy at all), and is reported once written.
TEST(ArtifactWriterTest, KeepsTheWeightsOfTheMomentAndReportsThemOnceWritten) {
  TempDirForTests temp;
  ArtifactWriter writer(temp.path());
  torch::nn::AnyModule model = SmallModel();
  const torch::Tensor kept = Weight(model);
  ASSERT_TRUE(writer.Keep(model, "best", 3, 0.875).ok());
  {
    torch::NoGradGuard no_grad;
    model.ptr()->named_parameters()["weight"].fill_(7);  // the next step, at once
  }
  absl::StatusOr<std::vector<trainer::v1::Artifact>> written = writer.Drain();
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), 1u);
  const trainer::v1::Artifact& artifact = (*written)[0];
  EXPECT_EQ(artifact.name(), "best");
  EXPECT_EQ(artifact.format(), "state_dict");
  EXPECT_EQ(artifact.epoch(), 3);
  EXPECT_DOUBLE_EQ(artifact.validation_accuracy(), 0.875);
  EXPECT_EQ(artifact.sha256(), *Sha256OfFile(temp / "best.pt"));
  EXPECT_GT(artifact.size_bytes(), 0);

  torch::nn::AnyModule loaded = SmallModel();
  {
    torch::NoGradGuard no_grad;
    loaded.ptr()->named_parameters()["weight"].zero_();
  }
  ASSERT_TRUE(LoadWeights(loaded, temp / "best.pt").ok());
  EXPECT_TRUE(torch::equal(Weight(loaded), kept));
  EXPECT_TRUE(writer.Drain()->empty());  // each artifact is reported once
}

TEST(ArtifactWriterTest, ArtifactsAreReportedInTheOrderKept) {
  TempDirForTests temp;
  ArtifactWriter writer(temp.path());
  torch::nn::AnyModule model = SmallModel();
  ASSERT_TRUE(writer.Keep(model, "best", 1, 0.5).ok());
  ASSERT_TRUE(writer.Keep(model, "best", 2, 0.6).ok());  // waits for the first
  ASSERT_TRUE(writer.Keep(model, "final", 2, std::nullopt).ok());
  absl::StatusOr<std::vector<trainer::v1::Artifact>> all = writer.Finished();
  absl::StatusOr<std::vector<trainer::v1::Artifact>> rest = writer.Drain();
  ASSERT_TRUE(all.ok() && rest.ok());
  all->insert(all->end(), rest->begin(), rest->end());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].epoch(), 1);
  EXPECT_EQ((*all)[1].epoch(), 2);
  EXPECT_EQ((*all)[2].name(), "final");
  EXPECT_EQ((*all)[2].validation_accuracy(), 0);
}

// Until the writer's caller collects a write, best.pt and the artifact reported for it stay as
// they were; a write never collected (the job threw or was killed first) leaves no file behind.
TEST(ArtifactWriterTest, AFileTakesItsNameOnlyWhenCollected) {
  TempDirForTests temp;
  torch::nn::AnyModule model = SmallModel();
  {
    ArtifactWriter writer(temp.path());
    ASSERT_TRUE(writer.Keep(model, "best", 1, 0.5).ok());
    const auto first = writer.Drain();
    ASSERT_TRUE(first.ok() && first->size() == 1u);
    {
      torch::NoGradGuard no_grad;
      model.ptr()->named_parameters()["weight"].fill_(3);
    }
    ASSERT_TRUE(writer.Keep(model, "best", 2, 0.6).ok());
    // Not collected: the writer goes, as when the job throws.
  }
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(temp.path())) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"best.pt"});
  torch::nn::AnyModule loaded = SmallModel();
  ASSERT_TRUE(LoadWeights(loaded, temp / "best.pt").ok());
  EXPECT_FALSE(torch::equal(Weight(loaded), torch::full_like(Weight(loaded), 3)))
      << "best.pt took weights whose artifact was never reported";
}

TEST(ArtifactWriterTest, AWriteThatFailsIsAnErrorNamingTheFile) {
  TempDirForTests temp;
  ArtifactWriter writer(temp / "missing");
  torch::nn::AnyModule model = SmallModel();
  ASSERT_TRUE(writer.Keep(model, "best", 1, 0.5).ok());  // the write fails on its thread
  const absl::StatusOr<std::vector<trainer::v1::Artifact>> written = writer.Drain();
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.status().message().find("best.pt"), std::string::npos) << written.status();
}

}  // namespace
}  // namespace traind
