#include "script/output_artifacts.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "common/artifact_names.h"
#include "common/sha256.h"
#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

class OutputArtifactsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(mkdir(outputs().c_str(), 0700), 0); }
  std::string outputs() const { return dir_ / "outputs"; }
  void Write(const std::string& path, const std::string& content) {
    std::ofstream(outputs() + "/" + path) << content;
  }
  TempDirForTests dir_;
};

TEST_F(OutputArtifactsTest, EveryPlainFileIsDescribedByItsPathSizeAndDigest) {
  ASSERT_EQ(mkdir((outputs() + "/plots").c_str(), 0700), 0);
  Write("model.pt", "weights");
  Write("plots/loss.csv", "1,2\n");
  absl::StatusOr<OutputArtifacts> found = CollectOutputArtifacts(outputs(), OutputLimits());
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->files.size(), 2u);
  EXPECT_EQ(found->files[0].name(), "model.pt");
  EXPECT_EQ(found->files[0].size_bytes(), 7);
  EXPECT_EQ(found->files[0].format(), "file");
  Sha256 hash;
  hash.Update("weights");
  EXPECT_EQ(found->files[0].sha256(), hash.HexDigest());
  EXPECT_EQ(found->files[1].name(), "plots/loss.csv");
  EXPECT_TRUE(found->skipped.empty());
}

TEST_F(OutputArtifactsTest, LinksAndSpecialFilesAreNamedButNeverRead) {
  Write("kept.txt", "x");
  ASSERT_EQ(symlink("/etc/passwd", (outputs() + "/passwd").c_str()), 0);
  ASSERT_EQ(mkdir((dir_ / "elsewhere").c_str(), 0700), 0);
  std::ofstream(dir_ / "elsewhere/secret") << "s";
  ASSERT_EQ(symlink((dir_ / "elsewhere").c_str(), (outputs() + "/linked-folder").c_str()), 0);
  ASSERT_EQ(mkfifo((outputs() + "/pipe").c_str(), 0600), 0);
  absl::StatusOr<OutputArtifacts> found = CollectOutputArtifacts(outputs(), OutputLimits());
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->files.size(), 1u);
  EXPECT_EQ(found->files[0].name(), "kept.txt");
  EXPECT_EQ(found->skipped,
            (std::vector<std::string>{"linked-folder (a symbolic link)", "passwd (a symbolic link)",
                                      "pipe (not a plain file)"}));
}

TEST_F(OutputArtifactsTest, FilesPastTheCapAreCountedNotListed) {
  for (int i = 0; i < 5; ++i) Write("f" + std::to_string(i), "x");
  OutputLimits limits;
  limits.max_files = 3;
  absl::StatusOr<OutputArtifacts> found = CollectOutputArtifacts(outputs(), limits);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->files.size(), 3u);
  EXPECT_EQ(found->not_listed, 2);
}

TEST_F(OutputArtifactsTest, AWalkLooksAtABoundedNumberOfEntriesAndBytes) {
  for (int i = 0; i < 50; ++i) Write("f" + std::to_string(i), std::string(1000, 'x'));
  OutputLimits limits;
  limits.max_entries = 10;
  absl::StatusOr<OutputArtifacts> found = CollectOutputArtifacts(outputs(), limits);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->files.size(), 10u);
  EXPECT_GT(found->not_listed, 0);
  limits = OutputLimits();
  limits.max_hashed_bytes = 4500;
  found = CollectOutputArtifacts(outputs(), limits);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->files.size(), 4u);
  EXPECT_EQ(found->not_listed, 46);
}

TEST_F(OutputArtifactsTest, NamesThatAreNotUtf8OrTooLongAreSkippedAndSaidSafely) {
  Write("ok.txt", "x");
  Write("bad\xff.txt", "x");
  // A path over the limit (each of its names is within the file system's 255 bytes).
  const std::string folder(200, 'd');
  ASSERT_EQ(mkdir((outputs() + "/" + folder).c_str(), 0700), 0);
  Write(folder + "/" + std::string(kMaxArtifactNameBytes - 200, 'n'), "x");
  absl::StatusOr<OutputArtifacts> found = CollectOutputArtifacts(outputs(), OutputLimits());
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->files.size(), 1u);
  EXPECT_EQ(found->files[0].name(), "ok.txt");
  ASSERT_EQ(found->skipped_total, 2);
  EXPECT_EQ(found->skipped[0], "bad\xef\xbf\xbd.txt (the name is not UTF-8)");  // U+FFFD
  EXPECT_NE(found->skipped[1].find("(the name is too long)"), std::string::npos);
}

TEST_F(OutputArtifactsTest, AMissingFolderIsAnError) {
  EXPECT_FALSE(CollectOutputArtifacts(dir_ / "absent", OutputLimits()).ok());
}

}  // namespace
}  // namespace traind
