#include "server/access_control.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("abcdef", "abcdef"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcdeg"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcde"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals(std::string("ab\0c", 4), "ab"));
}

std::string WriteTokens(const std::string& text) {
  const std::string path =
      std::filesystem::temp_directory_path() / ("traind-tokens-" + std::to_string(getpid()));
  std::ofstream(path) << text;
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  return path;
}

TEST(AccessControlTest, TokenFileLinesAreTokensWithOptionalNames) {
  const std::string path =
      WriteTokens("# lab tokens\n\n0123456789abcdef0123 alice\nfedcba9876543210fedc\n");
  absl::StatusOr<std::unique_ptr<AccessControl>> access =
      AccessControl::Create(path, AccessControl::Limits{});
  ASSERT_TRUE(access.ok()) << access.status();
  EXPECT_TRUE((*access)->has_tokens());
  std::filesystem::remove(path);
}

TEST(AccessControlTest, BadTokenFilesAreRefusedWithTheLine) {
  const std::string path = WriteTokens("short\n");
  absl::StatusOr<std::unique_ptr<AccessControl>> access =
      AccessControl::Create(path, AccessControl::Limits{});
  EXPECT_EQ(access.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(access.status().message().find(":1: a token must have at least 16"), std::string::npos)
      << access.status();
  std::ofstream(path) << "# only a comment\n";
  EXPECT_NE(AccessControl::Create(path, {}).status().message().find("has no tokens"),
            std::string::npos);
  EXPECT_FALSE(AccessControl::Create("/nonexistent/tokens", {}).ok());
  std::filesystem::remove(path);
}

TEST(AccessControlTest, ATokenFileEveryUserMayReadIsRefused) {
  const std::string path = WriteTokens("0123456789abcdef0123 alice\n");
  std::filesystem::permissions(path, std::filesystem::perms::others_read,
                               std::filesystem::perm_options::add);
  absl::StatusOr<std::unique_ptr<AccessControl>> access = AccessControl::Create(path, {});
  EXPECT_EQ(access.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(access.status().message().find("can be read by every user of this machine (mode "
                                           "0604); its tokens are passwords: chmod 600"),
            std::string::npos)
      << access.status();
  // Readable by its group (an operators' group) is the operator's choice.
  std::filesystem::permissions(
      path, std::filesystem::perms::group_read | std::filesystem::perms::owner_read);
  EXPECT_TRUE(AccessControl::Create(path, {}).ok());
  std::filesystem::remove(path);
}

TEST(AccessControlTest, OneTokenUnderTwoNamesIsRefused) {
  const std::string path = WriteTokens(
      "0123456789abcdef0123 alice\nfedcba9876543210fedc bob\n"
      "0123456789abcdef0123 mallory admin\n");
  absl::StatusOr<std::unique_ptr<AccessControl>> access = AccessControl::Create(path, {});
  EXPECT_EQ(access.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(access.status().message().find(":3: the same token as line 1"), std::string::npos)
      << access.status();
  std::filesystem::remove(path);
}

TEST(AccessControlTest, WatchSlotsAreLimitedPerTokenAndGivenBack) {
  absl::StatusOr<std::unique_ptr<AccessControl>> access =
      AccessControl::Create("", AccessControl::Limits{10, 2});
  ASSERT_TRUE(access.ok());
  const Caller alice{"alice", true};
  auto first = (*access)->AcquireWatch(alice);
  auto second = (*access)->AcquireWatch(alice);
  ASSERT_TRUE(first.ok() && second.ok());
  auto third = (*access)->AcquireWatch(alice);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE((*access)->AcquireWatch(Caller{"bob", true}).ok()) << "per token";
  first->reset();
  EXPECT_TRUE((*access)->AcquireWatch(alice).ok()) << "a closed watch gives its slot back";
  auto local = (*access)->AcquireWatch(Caller{"local", false});
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(*local, nullptr) << "local callers are not limited";
}

}  // namespace
}  // namespace traind
