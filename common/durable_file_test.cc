#include "common/durable_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
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

int FilesIn(const std::string& dir) {
  int count = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* entry = readdir(d)) {
      if (std::string(entry->d_name) != "." && std::string(entry->d_name) != "..") ++count;
    }
    closedir(d);
  }
  return count;
}

// A checkpoint whose fsync or rename fails: the error names the file, the cause and a code that
// follows it; the previous checkpoint is still there, whole, and no temporary file is left.
TEST(DurableFileTest, AFailedFsyncOrRenameKeepsThePreviousFile) {
  TempDirForTests temp;
  const std::string path = temp / "checkpoint.pt";
  ASSERT_TRUE(WriteFileDurably(path, "epoch 1").ok());
  for (const auto& [call, error, code, says] :
       {std::tuple{FaultyFileOps::Call::kFsync, EIO, absl::StatusCode::kInternal,
                   "Input/output error"},
        std::tuple{FaultyFileOps::Call::kRename, ENOSPC, absl::StatusCode::kResourceExhausted,
                   "No space left on device"},
        std::tuple{FaultyFileOps::Call::kRename, EROFS, absl::StatusCode::kPermissionDenied,
                   "Read-only file system"}}) {
    FaultyFileOps faulty;
    ScopedFileOps installed(&faulty);
    faulty.FailOnce(call, error);
    const absl::Status status = WriteFileDurably(path, "epoch 2");
    EXPECT_TRUE(faulty.failed());
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_EQ(status.message(), "cannot write " + path + ": " + says);
    EXPECT_EQ(Read(path), "epoch 1");
    EXPECT_EQ(FilesIn(temp.path()), 1) << "a temporary file was left";
  }
  ASSERT_TRUE(WriteFileDurably(path, "epoch 2").ok());
  EXPECT_EQ(Read(path), "epoch 2");
  EXPECT_EQ(FilesIn(temp.path()), 1);
}

// A staged file is whole and synced but leaves PATH alone until committed; a failed stage leaves
// nothing, and one never committed is a temporary file like any other.
TEST(DurableFileTest, AStagedFileTakesItsNameOnlyWhenCommitted) {
  TempDirForTests temp;
  const std::string path = temp / "best.pt";
  ASSERT_TRUE(WriteFileDurably(path, "epoch 1").ok());
  const absl::StatusOr<std::string> staged = StageFileDurably(path, "epoch 2");
  ASSERT_TRUE(staged.ok()) << staged.status();
  EXPECT_EQ(Read(path), "epoch 1");
  EXPECT_EQ(Read(*staged), "epoch 2");
  // WriteDurably's hidden temporary name, which RemoveStaleTemporaries knows.
  EXPECT_EQ(std::filesystem::path(*staged).filename().string().rfind(".best.pt.tmp-", 0), 0u)
      << *staged;
  ASSERT_TRUE(CommitDurably(*staged, path).ok());
  EXPECT_EQ(Read(path), "epoch 2");
  EXPECT_EQ(FilesIn(temp.path()), 1);

  FaultyFileOps faulty;
  ScopedFileOps installed(&faulty);
  faulty.FailOnce(FaultyFileOps::Call::kFsync, EIO);
  const absl::StatusOr<std::string> failed = StageFileDurably(path, "epoch 3", "best.pt");
  EXPECT_EQ(failed.status().message(), "cannot write best.pt: Input/output error");
  EXPECT_EQ(FilesIn(temp.path()), 1) << "a failed stage left a file";
  EXPECT_EQ(Read(path), "epoch 2");
}

// A writer's own error comes back as it is, and its temporary file goes.
TEST(DurableFileTest, AWritersErrorComesBackAndLeavesNothing) {
  TempDirForTests temp;
  const absl::Status status = WriteDurably(temp / "trace.json", [](const std::string& file) {
    std::ofstream(file) << "half a trace";
    return absl::DataLossError("the profiler lost its events");
  });
  EXPECT_EQ(status, absl::DataLossError("the profiler lost its events"));
  EXPECT_EQ(FilesIn(temp.path()), 0);
}

// A writer killed before its rename leaves its temporary file (its name is the one WriteDurably
// chose, taken here from inside `write`); RemoveStaleTemporaries takes those, and only those: not
// another file, not one in a folder, not one a live writer holds locked, not one just made.
TEST(DurableFileTest, TemporariesACrashLeftAreRemovedAndNothingElse) {
  TempDirForTests temp;
  std::string left;
  ASSERT_TRUE(WriteDurably(temp / "checkpoint.pt", [&](const std::string& file) {
                left = file;
                std::ofstream(file) << "epoch 3";
                return absl::OkStatus();
              }).ok());
  std::ofstream(left) << "half of epoch 4";  // what a kill -9 mid-write would leave behind
  const std::string locked = temp / ".best.pt.tmp-Q1w2E3";  // its writer alive
  std::ofstream(locked) << "being written";
  for (const char* theirs :
       {".checkpoint.pt", ".tmp-abcdef", "checkpoint.pt.tmp-abcdef", ".notes.tmp-abc", ".keep"}) {
    std::ofstream(temp / theirs) << "not a leftover";
  }
  ASSERT_TRUE(std::filesystem::create_directory(temp / "sub"));
  std::ofstream(temp / "sub/.model.pt.tmp-abcdef") << "in a folder: left alone";
  EXPECT_EQ(FilesIn(temp.path()), 9);
  // All seconds old: a writer may have made its file and not yet locked it.
  EXPECT_EQ(RemoveStaleTemporaries(temp.path()), 0);

  const auto an_hour_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  std::filesystem::last_write_time(left, an_hour_ago);
  std::filesystem::last_write_time(locked, an_hour_ago);
  const int writer = open(locked.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  ASSERT_EQ(flock(writer, LOCK_EX), 0);
  EXPECT_EQ(RemoveStaleTemporaries(temp.path()), 1);
  EXPECT_FALSE(std::filesystem::exists(left));
  EXPECT_TRUE(std::filesystem::exists(locked));
  EXPECT_EQ(Read(temp / "checkpoint.pt"), "epoch 3");

  close(writer);  // the writer died
  EXPECT_EQ(RemoveStaleTemporaries(temp.path()), 1);
  EXPECT_EQ(FilesIn(temp.path()), 7);
  EXPECT_EQ(RemoveStaleTemporaries(temp / "missing"), 0);
}

// kRefuse never replaces a file that appeared meanwhile; kReplace does.
TEST(DurableFileTest, CommitRefusesOrReplacesAnExistingFile) {
  TempDirForTests temp;
  const std::string path = temp / "weights.pt";
  std::ofstream(path) << "theirs";
  std::ofstream(temp / "part") << "ours";
  const absl::Status refused = CommitDurably(temp / "part", path, IfPresent::kRefuse);
  EXPECT_EQ(refused.code(), absl::StatusCode::kAlreadyExists) << refused;
  EXPECT_EQ(Read(path), "theirs");
  EXPECT_EQ(FilesIn(temp.path()), 1);
  std::ofstream(temp / "part") << "ours";
  ASSERT_TRUE(CommitDurably(temp / "part", path, IfPresent::kReplace).ok());
  EXPECT_EQ(Read(path), "ours");
  EXPECT_EQ(FilesIn(temp.path()), 1);
}

}  // namespace
}  // namespace traind
