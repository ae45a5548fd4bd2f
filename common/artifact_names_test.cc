#include "common/artifact_names.h"

#include <gtest/gtest.h>

namespace traind {
namespace {

TEST(ArtifactNamesTest, BuiltInJobsNameWeightsPlainly) {
  EXPECT_TRUE(ValidateArtifactName(false, "best").ok());
  EXPECT_TRUE(ValidateArtifactName(false, "final").ok());
  for (const char* bad : {"", "../best", "best.pt", "a/b", "best\n"}) {
    const absl::Status status = ValidateArtifactName(false, bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("name:"), std::string::npos) << status;
  }
}

TEST(ArtifactNamesTest, ScriptJobsNameFilesByTheirPathInTheOutputFolder) {
  EXPECT_TRUE(ValidateArtifactName(true, "model.pt").ok());
  EXPECT_TRUE(ValidateArtifactName(true, "plots/loss curve.png").ok());
  for (const char* bad : {"", "/etc/passwd", "../outputs/x", "a/../../b", "a//b", "./a"}) {
    EXPECT_EQ(ValidateArtifactName(true, bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(ValidateArtifactName(true, std::string(kMaxArtifactNameBytes, 'a')).ok());
  EXPECT_FALSE(ValidateArtifactName(true, std::string(kMaxArtifactNameBytes + 1, 'a')).ok());
}

TEST(ArtifactNamesTest, DefaultDownloadNamesAreOneSafeFileName) {
  EXPECT_EQ(DefaultDownloadName(7, "best"), "job7-best.pt");
  EXPECT_EQ(DefaultDownloadName(12, "checkpoints/model.pt"), "job12-model.pt");
  EXPECT_EQ(DefaultDownloadName(12, "plots/loss curve.png"), "job12-loss_curve.png");
  EXPECT_EQ(DefaultDownloadName(3, "x\"\r\nSet-Cookie: a.txt"), "job3-x___Set-Cookie__a.txt");
  EXPECT_EQ(DefaultDownloadName(3, ".hidden.txt"), "job3-_.hidden.txt");
  EXPECT_EQ(DefaultDownloadName(3, "logs/stdout"), "job3-stdout");   // a program's file, as named
  EXPECT_EQ(DefaultDownloadName(3, "\xc3\xa9.png"), "job3-__.png");  // by byte, as Python's
}

}  // namespace
}  // namespace traind
