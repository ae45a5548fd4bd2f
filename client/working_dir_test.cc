// What `trainctl run` sends of a working directory: ignore rules, symlinks, limits.
#include "client/working_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

std::vector<std::string> Paths(const std::vector<WorkingFile>& files) {
  std::vector<std::string> paths;
  for (const WorkingFile& file : files) paths.push_back(file.path);
  return paths;
}

class WorkingDirTest : public ::testing::Test {
 protected:
  void Write(const std::string& path, const std::string& content = "x") {
    const std::string full = dir_ / path;
    for (size_t slash = full.find('/', dir_.path().size() + 1); slash != std::string::npos;
         slash = full.find('/', slash + 1)) {
      mkdir(full.substr(0, slash).c_str(), 0700);
    }
    std::ofstream(full) << content;
  }
  TempDirForTests dir_;
};

TEST(IgnoreRulesTest, GitignoreSyntax) {
  IgnoreRules rules;
  rules.AddLines("# a comment\n*.log\n/build/\ndata/**/*.csv\n!keep.log\ncheckpoints/\n\\#odd\n");
  EXPECT_TRUE(rules.Ignored("run.log", false));
  EXPECT_TRUE(rules.Ignored("deep/inside/run.log", false));  // no slash: any depth
  EXPECT_FALSE(rules.Ignored("keep.log", false));            // re-included
  EXPECT_TRUE(rules.Ignored("build", true));
  EXPECT_FALSE(rules.Ignored("build", false));     // folders only
  EXPECT_FALSE(rules.Ignored("src/build", true));  // anchored to the top
  EXPECT_TRUE(rules.Ignored("data/a/b/x.csv", false));
  EXPECT_TRUE(rules.Ignored("data/x.csv", false));  // "**/" may be no folder at all
  EXPECT_FALSE(rules.Ignored("data/x.txt", false));
  EXPECT_TRUE(rules.Ignored("lib/checkpoints", true));
  EXPECT_TRUE(rules.Ignored("#odd", false));
  EXPECT_FALSE(rules.Ignored("train.py", false));
}

TEST_F(WorkingDirTest, SendsWhatTheRulesKeep) {
  Write("train.py");
  Write("lib/util.py");
  Write("lib/__pycache__/util.cpython-311.pyc");
  Write(".git/HEAD");
  Write("runs/1/events.out");
  Write("notes.tmp");
  Write(".gitignore", "runs/\n");
  Write(".traindignore", "*.tmp\n");
  ASSERT_EQ(chmod((dir_ / "train.py").c_str(), 0755), 0);
  absl::StatusOr<std::vector<WorkingFile>> files = ScanWorkingDir(dir_.path(), 1 << 20);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(Paths(*files),
            (std::vector<std::string>{".gitignore", ".traindignore", "lib/util.py", "train.py"}));
  EXPECT_TRUE(files->back().executable);
  EXPECT_FALSE((*files)[2].executable);
}

TEST_F(WorkingDirTest, ASymlinkInsideIsSentAsItsFileOneLeadingOutIsRefused) {
  Write("real.py", "print(1)");
  ASSERT_EQ(symlink("real.py", (dir_ / "alias.py").c_str()), 0);
  absl::StatusOr<std::vector<WorkingFile>> files = ScanWorkingDir(dir_.path(), 1 << 20);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(Paths(*files), (std::vector<std::string>{"alias.py", "real.py"}));
  EXPECT_EQ((*files)[0].absolute, (*files)[1].absolute);

  ASSERT_EQ(symlink("/etc/hostname", (dir_ / "outside").c_str()), 0);
  files = ScanWorkingDir(dir_.path(), 1 << 20);
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(files.status().message(), "outside is a symlink that leads out"))
      << files.status();
}

TEST_F(WorkingDirTest, OverTheLimitIsRefusedNamingTheLargestFiles) {
  Write("train.py", "print(1)");
  Write("data/big.bin", std::string(3 << 20, 'b'));
  absl::StatusOr<std::vector<WorkingFile>> files = ScanWorkingDir(dir_.path(), 1 << 20);
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(files.status().message(), "data/big.bin (3 MiB)"))
      << files.status();
  EXPECT_TRUE(absl::StrContains(files.status().message(), ".traindignore")) << files.status();
  EXPECT_EQ(ScanWorkingDir(dir_ / "absent", 1 << 20).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace traind
