#include "server/checked_request.h"

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/impl/grpc_library.h>

#include <string>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {
namespace {

// ByteBuffer and Slice call into gRPC's core through an interface this sets up.
grpc::internal::GrpcLibraryInitializer g_gli_initializer;

using trainer::v1::Job;
using trainer::v1::SubmitJobRequest;

// `bytes` as gRPC may deliver them: in one slice, or cut into several.
grpc::ByteBuffer Buffer(const std::string& bytes, std::vector<size_t> cuts = {}) {
  std::vector<grpc::Slice> slices;
  size_t begin = 0;
  cuts.push_back(bytes.size());
  for (size_t end : cuts) {
    slices.emplace_back(bytes.substr(begin, end - begin));
    begin = end;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

SubmitJobRequest Request() {
  SubmitJobRequest request;
  request.mutable_spec()->set_model("mlp");
  request.mutable_spec()->set_dataset("fake");
  request.mutable_spec()->set_batch_size(64);
  request.set_priority(-3);
  return request;
}

// The request: batch_size 2^40 + 5, which protobuf alone would read as 5.
std::string WideBatchSize() {
  std::string spec;
  {
    google::protobuf::io::StringOutputStream stream(&spec);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.WriteTag(6 << 3);  // batch_size, varint
    out.WriteVarint64((uint64_t{1} << 40) + 5);
  }
  std::string request;
  {
    google::protobuf::io::StringOutputStream stream(&request);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.WriteTag(1 << 3 | 2);  // spec, length-delimited
    out.WriteVarint32(static_cast<uint32_t>(spec.size()));
    out.WriteString(spec);
  }
  return request;
}

TEST(CheckedRequestTest, ParsesARequestInOneSliceOrSeveral) {
  const std::string bytes = Request().SerializeAsString();
  for (const std::vector<size_t>& cuts :
       {std::vector<size_t>{}, std::vector<size_t>{1, 5}, std::vector<size_t>{bytes.size() / 2}}) {
    SubmitJobRequest parsed;
    ASSERT_TRUE(ParseCheckedRequest(Buffer(bytes, cuts), &parsed).ok());
    EXPECT_EQ(parsed.SerializeAsString(), bytes);
  }
  SubmitJobRequest empty;  // a request with nothing set may arrive as no buffer at all
  EXPECT_TRUE(ParseCheckedRequest(grpc::ByteBuffer(), &empty).ok());
}

TEST(CheckedRequestTest, AWideInt32IsRefusedNamingTheFieldEvenAcrossSlices) {
  for (const std::vector<size_t>& cuts : {std::vector<size_t>{}, std::vector<size_t>{4}}) {
    SubmitJobRequest parsed;
    const absl::Status status = ParseCheckedRequest(Buffer(WideBatchSize(), cuts), &parsed);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(),
              "spec.batch_size: must fit in an int32 (-2147483648 to 2147483647), got "
              "1099511627781");
  }
  SubmitJobRequest parsed;
  const absl::Status garbage =
      ParseCheckedRequest(Buffer(std::string("\x0a\x05", 2) + "ab"), &parsed);
  EXPECT_EQ(garbage.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(garbage.message().rfind("not a valid trainer.v1.SubmitJobRequest", 0), 0u) << garbage;
}

TEST(CheckedRequestTest, ACallSealsItsReplyOnlyWhenTheWorkSucceeded) {
  grpc::ByteBuffer reply_bytes;
  CheckedCall<SubmitJobRequest, Job> call(&reply_bytes);
  ASSERT_TRUE(call.Parse(Buffer(Request().SerializeAsString())).ok());
  EXPECT_EQ(call.request()->spec().batch_size(), 64);
  call.reply()->set_id(7);
  EXPECT_EQ(call.Seal(absl::NotFoundError("job 7")).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(reply_bytes.Length(), 0u);  // an error sends no reply
  ASSERT_TRUE(call.Seal(absl::OkStatus()).ok());
  Job sent;
  ASSERT_TRUE(
      grpc::SerializationTraits<google::protobuf::Message>::Deserialize(&reply_bytes, &sent).ok());
  EXPECT_EQ(sent.id(), 7);
}

}  // namespace
}  // namespace traind
