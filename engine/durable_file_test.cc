#include "engine/durable_file.h"

#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <tuple>

#include "common/faulty_file_ops.h"
#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::Status WriteText(const std::string& text, const std::string& path) {
  return WriteDurably([&](const std::string& temp) { std::ofstream(temp) << text; }, path);
}

// A checkpoint whose fsync or rename fails: the error names the file and the cause, the previous
// checkpoint is still there, whole, and no temporary file is left beside it.
TEST(DurableFileTest, AFailedFsyncOrRenameKeepsThePreviousFile) {
  TempDirForTests temp;
  const std::string path = temp.path() + "/checkpoint.pt";
  ASSERT_TRUE(WriteText("epoch 1", path).ok());
  for (const auto& [call, error, says] :
       {std::tuple{FaultyFileOps::Call::kFsync, EIO, "Input/output error"},
        std::tuple{FaultyFileOps::Call::kRename, ENOSPC, "No space left on device"}}) {
    FaultyFileOps faulty;
    ScopedFileOps installed(&faulty);
    faulty.FailOnce(call, error);
    const absl::Status status = WriteText("epoch 2", path);
    EXPECT_TRUE(faulty.failed());
    EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
    EXPECT_EQ(status.message(), "cannot write " + path + ": " + says);
    EXPECT_EQ(Read(path), "epoch 1");
    EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0) << "a temporary file was left";
  }
  ASSERT_TRUE(WriteText("epoch 2", path).ok());
  EXPECT_EQ(Read(path), "epoch 2");
}

}  // namespace
}  // namespace traind
