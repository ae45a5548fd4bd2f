#include "common/beneath.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

using OpenFunction = absl::StatusOr<UniqueFd> (*)(const std::string&, const std::string&, int);

std::string Contents(const absl::StatusOr<UniqueFd>& fd) {
  if (!fd.ok()) return "<" + fd.status().ToString() + ">";
  absl::StatusOr<std::vector<char>> bytes = ReadAll(fd->get(), "test");
  return bytes.ok() ? std::string(bytes->begin(), bytes->end()) : "<unreadable>";
}

// A root with data/file.txt ("inside"), and beside it (outside the root) secret.txt and a
// directory secret/ holding file.txt ("outside").
class TreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(temp_.path().empty());
    root_ = temp_ / "root";
    outside_ = temp_ / "secret";
    ASSERT_EQ(mkdir(root_.c_str(), 0700), 0);
    ASSERT_EQ(mkdir((root_ + "/data").c_str(), 0700), 0);
    ASSERT_EQ(mkdir(outside_.c_str(), 0700), 0);
    std::ofstream(root_ + "/data/file.txt") << "inside";
    std::ofstream(outside_ + "/file.txt") << "outside";
    std::ofstream(temp_ / "secret.txt") << "outside";
  }
  void Link(const std::string& target, const std::string& name) {
    ASSERT_EQ(symlink(target.c_str(), (root_ + "/" + name).c_str()), 0) << name;
  }

  TempDirForTests temp_;
  std::string root_;
  std::string outside_;
};

// Every case runs against OpenBeneath (openat2 where the kernel has it) and the walk alone.
class BeneathTest : public TreeTest, public ::testing::WithParamInterface<OpenFunction> {
 protected:
  absl::StatusOr<UniqueFd> Open(const std::string& relative, int flags = O_RDONLY) {
    return GetParam()(root_, relative, flags);
  }
};

TEST_P(BeneathTest, APlainFileUnderTheRootOpens) {
  EXPECT_EQ(Contents(Open("data/file.txt")), "inside");
  EXPECT_EQ(Contents(Open("./data//file.txt")), "inside");
  EXPECT_TRUE(Open("", O_RDONLY | O_DIRECTORY).ok()) << "the root itself";
  EXPECT_TRUE(Open("data", O_RDONLY | O_DIRECTORY).ok());
  EXPECT_EQ(Open("data/missing.txt").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Open("data/file.txt/more").status().code(), absl::StatusCode::kNotFound);
}

TEST_P(BeneathTest, DotDotThatStaysInsideIsFineAndOneThatLeavesIsRefused) {
  EXPECT_EQ(Contents(Open("data/../data/file.txt")), "inside");
  const absl::StatusOr<UniqueFd> escape = Open("data/../../secret/file.txt");
  EXPECT_EQ(escape.status().code(), absl::StatusCode::kPermissionDenied) << escape.status();
  EXPECT_EQ(Open("../secret.txt").status().code(), absl::StatusCode::kPermissionDenied);
  // The same answer when nothing is there: the refusal does not look outside.
  EXPECT_EQ(Open("../no-such-file").status().code(), absl::StatusCode::kPermissionDenied);
}

TEST_P(BeneathTest, AnAbsoluteSymlinkOutOfTheRootIsRefusedWhetherOrNotItsTargetExists) {
  Link(outside_ + "/file.txt", "to-file");
  Link(outside_, "to-dir");
  Link(temp_ / "no-such-thing", "to-nothing");
  for (const char* path : {"to-file", "to-dir/file.txt", "to-nothing"}) {
    const absl::StatusOr<UniqueFd> opened = Open(path);
    EXPECT_EQ(opened.status().code(), absl::StatusCode::kPermissionDenied) << path;
    EXPECT_EQ(opened.status().message(),
              root_ + "/" + path +
                  " is outside the daemon's data roots (no symbolic link or '..' may lead out "
                  "of one)");
  }
}

TEST_P(BeneathTest, ARelativeSymlinkOutOfTheRootIsRefused) {
  Link("../secret/file.txt", "to-file");
  Link("data/../../secret", "to-dir");
  ASSERT_EQ(symlink("../../secret.txt", (root_ + "/data/deeper").c_str()), 0);
  EXPECT_EQ(Open("to-file").status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Open("to-dir/file.txt").status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Open("data/deeper").status().code(), absl::StatusCode::kPermissionDenied);
}

// The documented choice: links are followed while they stay inside the root, relative or
// absolute (openat2 refuses absolute ones; OpenBeneath then walks).
TEST_P(BeneathTest, ASymlinkThatStaysInsideTheRootIsFollowed) {
  Link("data/file.txt", "relative");
  Link(root_ + "/data/file.txt", "absolute");
  Link("data", "dir-link");
  Link(root_ + "/./data/../data", "absolute-dir-link");
  ASSERT_EQ(symlink("../relative", (root_ + "/data/chain").c_str()), 0);
  EXPECT_EQ(Contents(Open("relative")), "inside");
  EXPECT_EQ(Contents(Open("absolute")), "inside");
  EXPECT_EQ(Contents(Open("dir-link/file.txt")), "inside");
  EXPECT_EQ(Contents(Open("absolute-dir-link/file.txt")), "inside");
  EXPECT_EQ(Contents(Open("data/chain")), "inside");
  EXPECT_TRUE(Open("dir-link", O_RDONLY | O_DIRECTORY).ok());
  Link("loop-b", "loop-a");
  Link("loop-a", "loop-b");
  EXPECT_EQ(Open("loop-a").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_P(BeneathTest, ADirectorySwappedForASymlinkAfterACheckIsRefused) {
  ASSERT_EQ(Contents(Open("data/file.txt")), "inside");  // what admission saw
  ASSERT_EQ(rename((root_ + "/data").c_str(), (root_ + "/data.old").c_str()), 0);
  Link(outside_, "data");
  const absl::StatusOr<UniqueFd> swapped = Open("data/file.txt");
  EXPECT_EQ(swapped.status().code(), absl::StatusCode::kPermissionDenied) << swapped.status();
}

INSTANTIATE_TEST_SUITE_P(OpenBeneathAndTheWalk, BeneathTest,
                         ::testing::Values(&OpenBeneath, &OpenBeneathByWalk),
                         [](const ::testing::TestParamInfo<OpenFunction>& info) {
                           return std::string(info.param == &OpenBeneath ? "OpenBeneath" : "Walk");
                         });

TEST(LexicallyNormalTest, DropsDotsAndEmptyNamesAndNeverClimbsAboveTheTop) {
  EXPECT_EQ(LexicallyNormal("/data/a/../b/"), "/data/b");
  EXPECT_EQ(LexicallyNormal("//data/./b"), "/data/b");
  EXPECT_EQ(LexicallyNormal("/../../etc"), "/etc");
  EXPECT_EQ(LexicallyNormal("/"), "/");
  EXPECT_EQ(LexicallyNormal("/data/.."), "/");
  EXPECT_TRUE(IsLexicallyUnder("/data/b", "/data"));
  EXPECT_TRUE(IsLexicallyUnder("/data", "/data"));
  EXPECT_FALSE(IsLexicallyUnder("/database", "/data"));
  EXPECT_TRUE(IsLexicallyUnder("/anything", "/"));
}

using BeneathRootsTest = TreeTest;

TEST_F(BeneathRootsTest, APathOutsideEveryRootGetsOneAnswerWhetherOrNotItExists) {
  const BeneathRoots roots({root_});
  const absl::StatusOr<UniqueFd> exists = roots.OpenFile(outside_ + "/file.txt");
  const absl::StatusOr<UniqueFd> missing = roots.OpenFile(outside_ + "/nothing.txt");
  EXPECT_EQ(exists.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(exists.status().message(),
            outside_ +
                "/file.txt is outside the daemon's data roots (no symbolic link or '..' "
                "may lead out of one)");
  // `..` is taken lexically first, so climbing out by name is the same answer...
  EXPECT_EQ(roots.OpenFile(root_ + "/../secret/file.txt").status().code(),
            absl::StatusCode::kPermissionDenied);
  // ...and a link out of the root is named in the caller's words.
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/out").c_str()), 0);
  EXPECT_EQ(roots.OpenFile(root_ + "/out/file.txt").status().message(),
            root_ +
                "/out/file.txt is outside the daemon's data roots (no symbolic link or '..' "
                "may lead out of one)");
  EXPECT_EQ(Contents(roots.OpenFile(root_ + "/data/file.txt")), "inside");
  EXPECT_TRUE(roots.Contains(root_ + "/data/../data"));
  EXPECT_FALSE(roots.Contains(outside_));
}

TEST_F(BeneathRootsTest, WithoutRootsNothingIsConfined) {
  const BeneathRoots unconfined;
  EXPECT_EQ(Contents(unconfined.OpenFile(outside_ + "/file.txt")), "outside");
}

// `--data-root /`: everything is beneath it, and the path opened is the one named (its first
// character was once cut off with the root's).
TEST_F(BeneathRootsTest, TheFileSystemRootAsADataRootOpensThePathNamed) {
  const BeneathRoots everything({"/"});
  EXPECT_EQ(Contents(everything.OpenFile(outside_ + "/file.txt")), "outside");
}

TEST_F(BeneathRootsTest, OpenFileRefusesAFifoWithoutBlockingAndADirectory) {
  const BeneathRoots roots({root_});
  ASSERT_EQ(mkfifo((root_ + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(roots.OpenFile(root_ + "/fifo").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(roots.OpenFile(root_ + "/data").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(roots.OpenDirectory(root_ + "/data/file.txt").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(BeneathRootsTest, ListDirectorySaysWhatEachEntryIsWithoutFollowingLinks) {
  ASSERT_EQ(symlink(outside_.c_str(), (root_ + "/data/link").c_str()), 0);
  ASSERT_EQ(mkdir((root_ + "/data/sub").c_str(), 0700), 0);
  absl::StatusOr<UniqueFd> dir = BeneathRoots({root_}).OpenDirectory(root_ + "/data");
  ASSERT_TRUE(dir.ok()) << dir.status();
  absl::StatusOr<std::vector<DirectoryEntry>> entries = ListDirectory(dir->get(), "data");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].name, "file.txt");
  EXPECT_TRUE((*entries)[0].is_regular);
  EXPECT_EQ((*entries)[1].name, "link");
  EXPECT_TRUE((*entries)[1].is_symlink);
  EXPECT_FALSE((*entries)[1].is_directory);
  EXPECT_EQ((*entries)[2].name, "sub");
  EXPECT_TRUE((*entries)[2].is_directory);
  // The descriptor listed is still usable (the listing read a duplicate).
  EXPECT_TRUE(ListDirectory(dir->get(), "data").ok());
}

TEST_F(BeneathRootsTest, PathOfFdNamesTheFileReallyOpened) {
  absl::StatusOr<UniqueFd> fd = BeneathRoots({root_}).OpenFile(root_ + "/data/file.txt");
  ASSERT_TRUE(fd.ok());
  absl::StatusOr<std::string> path = PathOfFd(fd->get());
  if (path.status().code() == absl::StatusCode::kUnimplemented) GTEST_SKIP();
  ASSERT_TRUE(path.ok()) << path.status();
  ASSERT_GT(path->size(), 14u);
  EXPECT_EQ(path->substr(path->size() - 14), "/data/file.txt");
}

}  // namespace
}  // namespace traind
