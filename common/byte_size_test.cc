#include "common/byte_size.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace traind {
namespace {

TEST(ByteSizeTest, BytesAndPowersOf1024InAnySpelling) {
  EXPECT_EQ(*ParseByteSize("0"), 0);
  EXPECT_EQ(*ParseByteSize("4096"), 4096);
  EXPECT_EQ(*ParseByteSize("4096b"), 4096);
  EXPECT_EQ(*ParseByteSize("16GiB"), int64_t{16} << 30);
  EXPECT_EQ(*ParseByteSize("16gb"), int64_t{16} << 30);
  EXPECT_EQ(*ParseByteSize("16 G"), int64_t{16} << 30);
  EXPECT_EQ(*ParseByteSize(" 512MiB "), int64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("1ki"), 1024);
  EXPECT_EQ(*ParseByteSize("2TiB"), int64_t{2} << 40);
  EXPECT_EQ(*ParseByteSize("010MiB"), int64_t{10} << 20);  // decimal, not octal
}

TEST(ByteSizeTest, NegativeFractionalUnknownAndTooLargeAreRefusedSayingWhatIsAccepted) {
  for (const char* bad : {"", "-5", "-5MiB", "1.5GiB", "lots", "16 GiBs", "16PiB0", "0x10",
                          "9223372036854775808", "8388608TiB", "99999999999999999999"}) {
    const absl::StatusOr<int64_t> parsed = ParseByteSize(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("e.g. 16GiB"), std::string::npos);
  }
  EXPECT_EQ(*ParseByteSize("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(*ParseByteSize("8388607TiB"), int64_t{8388607} << 40);
}

}  // namespace
}  // namespace traind
