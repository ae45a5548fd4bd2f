#include "data/idx_file.h"

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

std::string Header(uint8_t ndims, std::initializer_list<uint32_t> dims) {
  std::string h = {0, 0, 0x08, static_cast<char>(ndims)};
  for (uint32_t d : dims) {
    h += static_cast<char>(d >> 24);
    h += static_cast<char>(d >> 16);
    h += static_cast<char>(d >> 8);
    h += static_cast<char>(d);
  }
  return h;
}

class IdxFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& bytes, bool gzip) {
    const std::string path = *dir_ / name;
    if (gzip) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(path, std::ios::binary) << bytes;
    }
    return path;
  }
  void SetUp() override { dir_ = std::make_unique<TempDirForTests>(); }
  void TearDown() override { dir_.reset(); }
  std::unique_ptr<TempDirForTests> dir_;
};

TEST_F(IdxFileTest, ReadsPlainAndGzip) {
  const std::string bytes = Header(3, {2, 2, 3}) + std::string("abcdefghijkl");
  for (bool gzip : {false, true}) {
    auto array = ReadIdxFile(Write(gzip ? "a.gz" : "a", bytes, gzip));
    ASSERT_TRUE(array.ok()) << array.status();
    EXPECT_EQ(array->dims, (std::vector<int64_t>{2, 2, 3}));
    ASSERT_EQ(array->data.size(), 12u);
    EXPECT_EQ(array->data[11], 'l');
  }
}

TEST_F(IdxFileTest, ACacheKeepsADecompressedCopyAndFollowsTheSource) {
  const std::string cache = *dir_ / "cache";
  const std::string bytes = Header(3, {2, 2, 3}) + std::string("abcdefghijkl");
  const std::string path = Write("a.gz", bytes, true);
  absl::StatusOr<IdxArray> first = ReadIdxFileCached(path, cache);
  ASSERT_TRUE(first.ok()) << first.status();
  // One plain copy, whole: the IDX bytes themselves.
  std::vector<std::string> copies;
  for (const auto& entry : std::filesystem::directory_iterator(cache)) {
    copies.push_back(entry.path().string());
  }
  ASSERT_EQ(copies.size(), 1u);
  std::ifstream in(copies[0], std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), bytes);
  absl::StatusOr<IdxArray> second = ReadIdxFileCached(path, cache);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->dims, first->dims);
  EXPECT_EQ(second->data, first->data);

  // A copy that does not read (cut short) is not trusted: the source is read and the copy
  // rewritten.
  std::ofstream(copies[0], std::ios::binary | std::ios::trunc) << Header(3, {2, 2, 3}) << "ab";
  absl::StatusOr<IdxArray> repaired = ReadIdxFileCached(path, cache);
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  EXPECT_EQ(repaired->data, first->data);
  std::ifstream again(copies[0], std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(again), {}), bytes);

  // A changed source (other size) is a new key, so its new content is what is read.
  const std::string changed = Header(1, {5}) + std::string("vwxyz");
  Write("a.gz", changed, true);
  absl::StatusOr<IdxArray> updated = ReadIdxFileCached(path, cache);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(updated->dims, (std::vector<int64_t>{5}));
  EXPECT_EQ(updated->data[4], 'z');

  // A cache directory that cannot be made costs only the speed-up.
  absl::StatusOr<IdxArray> uncached = ReadIdxFileCached(path, "/proc/nonexistent/cache");
  ASSERT_TRUE(uncached.ok()) << uncached.status();
  EXPECT_EQ(uncached->data, updated->data);
}

TEST_F(IdxFileTest, TruncatedFileNamesThePath) {
  const std::string path = Write("short.gz", Header(1, {100}) + std::string(10, 'x'), true);
  auto array = ReadIdxFile(path);
  EXPECT_EQ(array.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(array.status().message().find(path), absl::string_view::npos);
  EXPECT_NE(array.status().message().find("truncated"), absl::string_view::npos);
}

TEST_F(IdxFileTest, BadMagicIsRefused) {
  auto array = ReadIdxFile(Write("bad", "GIF89a this is not idx", false));
  EXPECT_EQ(array.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(array.status().message().find("magic"), absl::string_view::npos);
}

TEST_F(IdxFileTest, CorruptGzipIsAnError) {
  std::string gz;
  {
    const std::string path = Write("tmp.gz", Header(1, {4000}) + std::string(4000, 'x'), true);
    std::ifstream in(path, std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(in), {});
  }
  gz.resize(gz.size() / 2);  // cut the compressed stream
  auto array = ReadIdxFile(Write("cut.gz", gz, false));
  EXPECT_FALSE(array.ok());
  EXPECT_EQ(array.status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(IdxFileTest, FindPrefersPlainThenGzip) {
  Write("train-labels-idx1-ubyte.gz", Header(1, {1}) + "x", true);
  auto found = OpenIdxFile(dir_->path(), "train-labels-idx1-ubyte");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->path, *dir_ / "train-labels-idx1-ubyte.gz");
  EXPECT_TRUE(found->fd.valid());
  EXPECT_EQ(OpenIdxFile(dir_->path(), "t10k-labels-idx1-ubyte").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace traind
