#include "common/loopback.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(LoopbackTest, LoopbackAddressesAreRecognisedByWhatTheyResolveTo) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:50051"));
  EXPECT_TRUE(IsLoopbackAddress("127.3.2.1:1"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:50051"));
  EXPECT_TRUE(IsLoopbackAddress("[::ffff:127.0.0.1]:50051"));
}

TEST(LoopbackTest, TextThatOnlyLooksLikeLoopbackIsNot) {
  // The old check compared prefixes: each of these passed it.
  EXPECT_FALSE(IsLoopbackAddress("127.0.0.1.nip.invalid:50051"));  // a host name, unresolvable
  EXPECT_FALSE(IsLoopbackAddress("127.0.0.1"));                    // no port
  EXPECT_FALSE(IsLoopbackAddress("[::1]"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:50051"));  // every interface
  EXPECT_FALSE(IsLoopbackAddress("[::]:50051"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.1:50051"));
  EXPECT_FALSE(IsLoopbackAddress("::1:50051"));  // IPv6 without brackets is ambiguous
  EXPECT_FALSE(IsLoopbackAddress(""));
  EXPECT_FALSE(IsLoopbackAddress(":50051"));
}

}  // namespace
}  // namespace traind
