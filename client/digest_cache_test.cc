#include "client/digest_cache.h"

#include <sys/stat.h>
#include <utime.h>

#include <fstream>

#include "common/sha256.h"
#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(DigestCacheTest, RemembersAnUnchangedFileAndRehashesAChangedOne) {
  TempDirForTests temp;
  const std::string file = temp.path() + "/data.pt";
  const std::string cache = temp.path() + "/cache/trainctl";
  std::ofstream(file) << "first content";
  auto first = CachedSha256OfFile(file, cache);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, *Sha256OfFile(file));

  // The cache answers for the unchanged file: prove it by planting a different digest for it.
  std::string lines;
  {
    std::ifstream in(cache + "/digests");
    std::getline(in, lines);
  }
  const std::string key = lines.substr(0, lines.rfind(' '));
  std::ofstream(cache + "/digests", std::ios::app) << key << " " << std::string(64, 'a') << "\n";
  EXPECT_EQ(*CachedSha256OfFile(file, cache), std::string(64, 'a'));

  // New content (a new size and mtime): hashed again.
  std::ofstream(file) << "second, longer content";
  struct utimbuf times {
    1000000, 1000000
  };
  utime(file.c_str(), &times);
  auto second = CachedSha256OfFile(file, cache);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *Sha256OfFile(file));
  EXPECT_NE(*second, *first);

  EXPECT_TRUE(absl::IsNotFound(CachedSha256OfFile(temp.path() + "/none", cache).status()));

  // A cache directory others can write to is not believed (or written): the planted digest for
  // the current content is ignored.
  {
    std::ifstream in(cache + "/digests");
    std::string line, last;
    while (std::getline(in, line)) last = line;
    std::ofstream(cache + "/digests", std::ios::app)
        << last.substr(0, last.rfind(' ')) << " " << std::string(64, 'b') << "\n";
  }
  EXPECT_EQ(*CachedSha256OfFile(file, cache), std::string(64, 'b'));  // private: believed
  ASSERT_EQ(chmod(cache.c_str(), 0777), 0);
  EXPECT_EQ(*CachedSha256OfFile(file, cache), *Sha256OfFile(file));
}

}  // namespace
}  // namespace traind
