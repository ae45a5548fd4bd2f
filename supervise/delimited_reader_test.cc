#include "supervise/delimited_reader.h"

#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/delimited_message_util.h"
#include "gtest/gtest.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {
namespace {

std::string Frame(const trainer::v1::JobEvent& event) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::util::SerializeDelimitedToZeroCopyStream(event, &stream);
  return out;
}

TEST(DelimitedReaderTest, ReassemblesMessagesSplitAnywhere) {
  std::string bytes;
  for (int i = 0; i < 3; ++i) {
    trainer::v1::JobEvent event;
    event.mutable_step()->set_batch(i * 100);
    bytes += Frame(event);
  }
  DelimitedReader reader;
  std::vector<int> batches;
  for (char c : bytes) {  // one byte at a time: the worst case of a pipe
    reader.Append(&c, 1);
    trainer::v1::JobEvent event;
    bool got = false;
    ASSERT_TRUE(reader.Next(&event, &got).ok());
    if (got) batches.push_back(event.step().batch());
  }
  EXPECT_EQ(batches, (std::vector<int>{0, 100, 200}));
  EXPECT_EQ(reader.pending_bytes(), 0u);
}

TEST(DelimitedReaderTest, GarbageIsDataLoss) {
  DelimitedReader reader;
  const std::string garbage = "\x05\xff\xff\xff\xff\xff";
  reader.Append(garbage.data(), garbage.size());
  trainer::v1::JobEvent event;
  bool got = false;
  EXPECT_EQ(reader.Next(&event, &got).code(), absl::StatusCode::kDataLoss);
}

TEST(DelimitedReaderTest, HugeLengthIsRefusedBeforeBuffering) {
  DelimitedReader reader;
  const std::string prefix = "\xff\xff\xff\xff\x0f";  // ~4 GiB
  reader.Append(prefix.data(), prefix.size());
  trainer::v1::JobEvent event;
  bool got = false;
  EXPECT_EQ(reader.Next(&event, &got).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace traind
