#include "common/on_path.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

// An executable file counts; a file that is not executable, a directory, or nothing does not.
TEST(OnPathTest, FindsExecutableFilesOnly) {
  TempDirForTests dir;
  ASSERT_FALSE(dir.path().empty());
  const std::filesystem::path bin = dir.path();
  std::ofstream(bin / "runnable") << "#!/bin/sh\n";
  std::ofstream(bin / "plain") << "text\n";
  chmod((bin / "runnable").c_str(), 0755);
  chmod((bin / "plain").c_str(), 0644);
  std::filesystem::create_directory(bin / "folder");
  chmod((bin / "folder").c_str(), 0755);
  const char* saved = std::getenv("PATH");
  const std::string old_path = saved != nullptr ? saved : "";
  setenv("PATH", ("/nonexistent::" + bin.string()).c_str(), 1);
  EXPECT_TRUE(OnPath("runnable"));
  EXPECT_FALSE(OnPath("plain"));
  EXPECT_FALSE(OnPath("folder"));
  EXPECT_FALSE(OnPath("absent"));
  setenv("PATH", old_path.c_str(), 1);
}

}  // namespace
}  // namespace traind
