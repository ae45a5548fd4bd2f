#include "client/part_file.h"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/faulty_file_ops.h"
#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

int FilesIn(const std::string& dir) {
  int n = 0;
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  while (const dirent* e = readdir(d.get()))
    n += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
  return n;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A download whose write, fsync, link or rename fails: the real cause is reported, nothing
// appears under the output name (or what was there stays), and the part file is gone.
TEST(PartFileTest, AFailedWriteFsyncLinkOrRenameLeavesNothingHalfWritten) {
  using Call = FaultyFileOps::Call;
  TempDirForTests temp;
  const std::string output = temp.path() + "/model.pt";
  {
    FaultyFileOps faulty;
    ScopedFileOps installed(&faulty);
    faulty.FailOnce(Call::kWrite, ENOSPC);
    PartFile part(output);
    ASSERT_TRUE(part.ok());
    EXPECT_FALSE(part.Write("weights"));
    EXPECT_EQ(errno, ENOSPC);
  }
  EXPECT_EQ(FilesIn(temp.path()), 0);
  struct Case {
    Call call;
    int error;
    bool force;
    absl::StatusCode code;
    const char* says;
  };
  for (const Case& c :
       {Case{Call::kFsync, EIO, false, absl::StatusCode::kInternal, "Input/output error"},
        Case{Call::kLink, EDQUOT, false, absl::StatusCode::kResourceExhausted,
             "Disk quota exceeded"},
        Case{Call::kRename, EROFS, true, absl::StatusCode::kPermissionDenied,
             "Read-only file system"}}) {
    SCOPED_TRACE(c.says);
    FaultyFileOps faulty;
    ScopedFileOps installed(&faulty);
    {
      PartFile part(output);
      ASSERT_TRUE(part.ok());
      ASSERT_TRUE(part.Write("weights"));
      faulty.FailOnce(c.call, c.error);
      const absl::Status kept = part.KeepAs(output, c.force);
      EXPECT_TRUE(faulty.failed());
      EXPECT_EQ(kept.code(), c.code) << kept;
      EXPECT_NE(kept.message().find(c.says), std::string::npos) << kept;
    }
    EXPECT_EQ(FilesIn(temp.path()), 0);
  }
  // With --force over an existing file: a failed rename leaves the old one as it was.
  std::ofstream(output) << "old weights";
  {
    FaultyFileOps faulty;
    ScopedFileOps installed(&faulty);
    PartFile part(output);
    ASSERT_TRUE(part.Write("new weights"));
    faulty.FailOnce(Call::kRename, EIO);
    EXPECT_FALSE(part.KeepAs(output, true).ok());
  }
  EXPECT_EQ(Read(output), "old weights");
  EXPECT_EQ(FilesIn(temp.path()), 1);
}

}  // namespace
}  // namespace traind
