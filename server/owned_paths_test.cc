#include "server/owned_paths.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

// A socket bound at `path`, listening when `listen_too`; the fd is returned for closing.
int BindSocket(const std::string& path, bool listen_too) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address;
  std::memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0) << path;
  if (listen_too) EXPECT_EQ(listen(fd, 1), 0);
  return fd;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(OwnedPathsTest, AnOrdinaryFileAtTheSocketPathIsRefusedAndKept) {
  TempDirForTests dir;
  const std::string path = dir.path() + "/traind.db";  // e.g. the daemon's own database
  std::ofstream(path) << "precious";
  absl::Status status = ClaimSocketPath(path);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("is a regular file, not a socket"), std::string::npos) << status;
  EXPECT_EQ(Slurp(path), "precious");
}

TEST(OwnedPathsTest, DirectoriesAndSymlinksAreRefusedAndKept) {
  TempDirForTests dir;
  const std::string target = dir.path() + "/target";
  std::ofstream(target) << "precious";
  const std::string link = dir.path() + "/link.sock";
  std::filesystem::create_symlink(target, link);
  EXPECT_NE(ClaimSocketPath(link).message().find("a symbolic link"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(Slurp(target), "precious");
  EXPECT_NE(ClaimSocketPath(dir.path()).message().find("a directory"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_directory(dir.path()));
}

TEST(OwnedPathsTest, ALiveSocketIsRefusedAndAStaleOneIsRemoved) {
  TempDirForTests dir;
  const std::string live = dir.path() + "/live.sock";
  const int listening = BindSocket(live, /*listen_too=*/true);
  absl::Status status = ClaimSocketPath(live);
  EXPECT_NE(status.message().find("another process is listening"), std::string::npos) << status;
  EXPECT_TRUE(std::filesystem::exists(live));
  close(listening);

  const std::string stale = dir.path() + "/stale.sock";
  close(BindSocket(stale, /*listen_too=*/false));  // what a crashed traind leaves
  EXPECT_TRUE(ClaimSocketPath(stale).ok());
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(ClaimSocketPath(stale).ok());  // nothing there: fine
}

TEST(OwnedPathsTest, ShutdownRemovesOnlyTheSocketItBound) {
  TempDirForTests dir;
  const std::string path = dir.path() + "/traind.sock";
  const int fd = BindSocket(path, true);
  absl::StatusOr<BoundSocket> bound = AdoptBoundSocket(path);
  ASSERT_TRUE(bound.ok()) << bound.status();
  struct stat st;
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  close(fd);
  // Someone moved it away and bound a new socket there (kept alive elsewhere, the old inode cannot
  // be reused): the new one is left alone.
  ASSERT_EQ(rename(path.c_str(), (path + ".moved").c_str()), 0);
  const int again = BindSocket(path, true);
  RemoveBoundSocket(*bound);
  EXPECT_TRUE(std::filesystem::exists(path));
  close(again);
  // Or replaced it with a file: left alone too.
  unlink(path.c_str());
  std::ofstream(path) << "not yours";
  RemoveBoundSocket(*bound);
  EXPECT_EQ(Slurp(path), "not yours");
  // Still there and untouched: removed.
  unlink(path.c_str());
  const int ours = BindSocket(path, true);
  absl::StatusOr<BoundSocket> bound_again = AdoptBoundSocket(path);
  ASSERT_TRUE(bound_again.ok()) << bound_again.status();
  RemoveBoundSocket(*bound_again);
  EXPECT_FALSE(std::filesystem::exists(path));
  close(ours);
}

TEST(OwnedPathsTest, StateDirectoryIsCreatedPrivateAndAnOpenOneIsRefusedNotChmodded) {
  TempDirForTests dir;
  const std::string fresh = dir.path() + "/a/b/state";
  ASSERT_TRUE(PreparePrivateDir(fresh).ok());
  struct stat st;
  ASSERT_EQ(stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(PreparePrivateDir(fresh).ok());  // again: it is ours

  const std::string open_dir = dir.path() + "/shared";
  ASSERT_EQ(mkdir(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  absl::Status status = PreparePrivateDir(open_dir);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("can be written by other users (mode 0777)"), std::string::npos)
      << status;
  ASSERT_EQ(stat(open_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0777u);  // untouched

  const std::string file = dir.path() + "/file";
  std::ofstream(file) << "x";
  EXPECT_NE(PreparePrivateDir(file).message().find("is a regular file, not a directory"),
            std::string::npos);
}

}  // namespace
}  // namespace traind
