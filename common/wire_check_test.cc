#include "common/wire_check.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptorProto;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;
using trainer::v1::SubmitJobRequest;

constexpr int kVarint = 0;
constexpr int kFixed64 = 1;
constexpr int kLengthDelimited = 2;
constexpr int kStartGroup = 3;
constexpr int kEndGroup = 4;
constexpr int kFixed32 = 5;

// Protobuf wire format written field by field, as a client that is not protobuf's C++ library
// could write it: any varint in any field.
class Wire {
 public:
  Wire& Tag(int number, int wire_type) {
    Write([&](CodedOutputStream& out) {
      out.WriteTag(static_cast<uint32_t>(number) << 3 | static_cast<uint32_t>(wire_type));
    });
    return *this;
  }
  Wire& Varint(int number, uint64_t value) {
    Tag(number, kVarint);
    Write([&](CodedOutputStream& out) { out.WriteVarint64(value); });
    return *this;
  }
  Wire& Bytes(int number, const std::string& body) {
    Tag(number, kLengthDelimited);
    Write([&](CodedOutputStream& out) {
      out.WriteVarint32(static_cast<uint32_t>(body.size()));
      out.WriteString(body);
    });
    return *this;
  }
  Wire& Message(int number, const Wire& inner) { return Bytes(number, inner.str()); }
  Wire& Raw(const std::string& raw) {
    bytes_ += raw;
    return *this;
  }
  const std::string& str() const { return bytes_; }

 private:
  template <typename F>
  void Write(F write) {
    StringOutputStream stream(&bytes_);  // appends
    CodedOutputStream out(&stream);
    write(out);
  }

  std::string bytes_;
};

// Packed varints: the body of a length-delimited packed field.
std::string Packed(const std::vector<uint64_t>& values) {
  std::string body;
  {
    StringOutputStream stream(&body);
    CodedOutputStream out(&stream);
    for (uint64_t v : values) out.WriteVarint64(v);
  }
  return body;
}

uint64_t SignExtended(int64_t value) { return static_cast<uint64_t>(value); }

absl::Status Check(const Descriptor& type, const Wire& wire) {
  return CheckVarintWidths(type, wire.str());
}

// Field numbers (trainer.proto).
constexpr int kSubmitSpec = 1, kSubmitPriority = 2, kSubmitExclusive = 5;
constexpr int kSpecModel = 1, kSpecBatchSize = 6, kSpecLimitTrain = 10, kSpecNesterov = 16;
constexpr int kSpecBenchmark = 32, kSpecDebug = 34, kBenchmarkSize = 2, kDebugCrashAtStep = 1;
constexpr int kSweepRequestSpec = 1, kSweepBase = 1, kSweepConfigs = 3, kSweepRepeat = 4;
constexpr int kSpecEpochs = 5;

TEST(WireCheckTest, WhatProtobufWritesPasses) {
  SubmitJobRequest submit;
  trainer::v1::JobSpec* spec = submit.mutable_spec();
  spec->set_model("mlp");
  spec->set_dataset("fake");
  spec->set_batch_size(std::numeric_limits<int32_t>::max());
  spec->set_limit_train(0);
  spec->set_seed(std::numeric_limits<uint64_t>::max());
  spec->set_nesterov(true);
  spec->set_learning_rate(1e300);  // a double: not this check's business
  spec->mutable_benchmark()->set_size(4096);
  spec->mutable_debug()->set_crash_at_step(-7);
  submit.set_priority(std::numeric_limits<int32_t>::min());  // 10 bytes, sign-extended
  submit.add_after(1);
  submit.add_after(-2);
  submit.set_exclusive(true);
  EXPECT_TRUE(CheckVarintWidths(*SubmitJobRequest::descriptor(), submit.SerializeAsString()).ok());

  trainer::v1::SubmitSweepRequest sweep;
  sweep.mutable_spec()->mutable_base()->set_epochs(3);
  for (int i = 0; i < 3; ++i) sweep.mutable_spec()->add_configs()->set_batch_size(-i);
  auto* axis = sweep.mutable_spec()->add_axes();
  axis->set_field("threads");
  axis->add_values("1");
  sweep.mutable_spec()->set_repeat(2);
  sweep.mutable_spec()->set_priority(-1);
  EXPECT_TRUE(
      CheckVarintWidths(*trainer::v1::SubmitSweepRequest::descriptor(), sweep.SerializeAsString())
          .ok());

  trainer::v1::ListJobsRequest list;  // states: a packed repeated enum
  list.add_states(trainer::v1::Job::QUEUED);
  list.add_states(trainer::v1::Job::FAILED);
  list.set_page_size(1000);
  EXPECT_TRUE(
      CheckVarintWidths(*trainer::v1::ListJobsRequest::descriptor(), list.SerializeAsString())
          .ok());
  EXPECT_TRUE(CheckVarintWidths(*SubmitJobRequest::descriptor(), "").ok());
}

// The request: protobuf's parser keeps the low 32 bits and says nothing.
TEST(WireCheckTest, AnInt32SentWiderIsRefusedNamingTheField) {
  const Wire wire = Wire().Message(
      kSubmitSpec, Wire().Bytes(kSpecModel, "mlp").Varint(kSpecBatchSize, (uint64_t{1} << 40) + 5));
  SubmitJobRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire.str()));
  EXPECT_EQ(parsed.spec().batch_size(), 5);  // what the check is for
  const absl::Status status = Check(*SubmitJobRequest::descriptor(), wire);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "spec.batch_size: must fit in an int32 (-2147483648 to 2147483647), got 1099511627781");

  const Wire limit = Wire().Message(kSubmitSpec, Wire().Varint(kSpecLimitTrain, uint64_t{1} << 35));
  ASSERT_TRUE(parsed.ParseFromString(limit.str()));
  EXPECT_EQ(parsed.spec().limit_train(), 0);  // "all the data"
  EXPECT_EQ(Check(*SubmitJobRequest::descriptor(), limit).message(),
            "spec.limit_train: must fit in an int32 (-2147483648 to 2147483647), got 34359738368");
}

TEST(WireCheckTest, Int32EndsAndNegativeEncodings) {
  const Descriptor& type = *trainer::v1::SetJobPriorityRequest::descriptor();
  constexpr int kPriority = 2;
  auto check = [&](uint64_t varint) { return Check(type, Wire().Varint(kPriority, varint)); };
  EXPECT_TRUE(check(std::numeric_limits<int32_t>::max()).ok());
  EXPECT_TRUE(check(SignExtended(std::numeric_limits<int32_t>::min())).ok());
  EXPECT_TRUE(check(SignExtended(-1)).ok());
  EXPECT_EQ(check(uint64_t{1} << 31).message(),
            "priority: must fit in an int32 (-2147483648 to 2147483647), got 2147483648 (a "
            "negative int32 is sent as 10 bytes, sign-extended)");
  EXPECT_EQ(check(SignExtended(int64_t{std::numeric_limits<int32_t>::min()} - 1)).message(),
            "priority: must fit in an int32 (-2147483648 to 2147483647), got -2147483649");
  // -1 as a uint32 would be (5 bytes): the parser reads -1, but no protobuf writer sends that.
  trainer::v1::SetJobPriorityRequest parsed;
  const Wire five_bytes = Wire().Varint(kPriority, 0xFFFFFFFFu);
  ASSERT_TRUE(parsed.ParseFromString(five_bytes.str()));
  EXPECT_EQ(parsed.priority(), -1);
  EXPECT_EQ(Check(type, five_bytes).code(), absl::StatusCode::kInvalidArgument);
  // A value written in more bytes than it needs still fits.
  const Wire overlong = Wire()
                            .Tag(kPriority, kVarint)
                            .Raw(std::string("\x85\x80\x80\x80\x80\x80\x80\x80\x80\x00", 10));
  ASSERT_TRUE(parsed.ParseFromString(overlong.str()));
  EXPECT_EQ(parsed.priority(), 5);
  EXPECT_TRUE(Check(type, overlong).ok());
}

TEST(WireCheckTest, EnumsAndPackedAndUnpackedRepeatedFields) {
  const Descriptor& list = *trainer::v1::ListJobsRequest::descriptor();
  constexpr int kPageSize = 1, kStates = 3;
  EXPECT_EQ(Check(list, Wire().Bytes(kStates, Packed({1, (uint64_t{1} << 33) + 1, 2}))).message(),
            "states[1]: must fit in an int32 (-2147483648 to 2147483647), got 8589934593");
  // Unpacked elements (a parser takes both forms) count on from the packed ones.
  EXPECT_EQ(Check(list, Wire()
                            .Bytes(kStates, Packed({1, 2}))
                            .Varint(kStates, 3)
                            .Varint(kStates, uint64_t{1} << 32))
                .message(),
            "states[3]: must fit in an int32 (-2147483648 to 2147483647), got 4294967296");
  EXPECT_EQ(Check(list, Wire().Varint(kPageSize, uint64_t{1} << 32)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Check(*trainer::v1::SetQueueStateRequest::descriptor(),
                  Wire().Varint(1, (uint64_t{1} << 32) + 3))
                .message(),
            "action: must fit in an int32 (-2147483648 to 2147483647), got 4294967299");
}

TEST(WireCheckTest, BoolsAreZeroOrOne) {
  const Descriptor& type = *SubmitJobRequest::descriptor();
  EXPECT_TRUE(Check(type, Wire().Varint(kSubmitExclusive, 1)).ok());
  EXPECT_EQ(Check(type, Wire().Varint(kSubmitExclusive, 2)).message(),
            "exclusive: a bool is 0 or 1 on the wire, got 2");
  EXPECT_EQ(
      Check(type, Wire().Message(kSubmitSpec, Wire().Varint(kSpecNesterov, uint64_t{1} << 32)))
          .message(),
      "spec.nesterov: a bool is 0 or 1 on the wire, got 4294967296");
}

TEST(WireCheckTest, PathsNameNestedAndRepeatedMessages) {
  const Descriptor& type = *trainer::v1::SubmitSweepRequest::descriptor();
  const uint64_t wide = (uint64_t{1} << 32) + 1;
  auto sweep = [](const Wire& sweep_spec) { return Wire().Message(kSweepRequestSpec, sweep_spec); };
  EXPECT_EQ(
      Check(type,
            sweep(Wire().Message(
                kSweepBase, Wire().Message(kSpecBenchmark, Wire().Varint(kBenchmarkSize, wide)))))
          .message(),
      "spec.base.benchmark.size: must fit in an int32 (-2147483648 to 2147483647), got 4294967297");
  EXPECT_EQ(Check(type, sweep(Wire()
                                  .Message(kSweepConfigs, Wire().Varint(kSpecEpochs, 1))
                                  .Message(kSweepConfigs, Wire().Varint(kSpecEpochs, wide))))
                .message(),
            "spec.configs[1].epochs: must fit in an int32 (-2147483648 to 2147483647), got "
            "4294967297");
  EXPECT_EQ(Check(type, sweep(Wire().Varint(kSweepRepeat, wide))).message(),
            "spec.repeat: must fit in an int32 (-2147483648 to 2147483647), got 4294967297");
  EXPECT_EQ(Check(type, sweep(Wire().Message(
                            kSweepBase,
                            Wire().Message(kSpecDebug, Wire().Varint(kDebugCrashAtStep, wide)))))
                .message(),
            "spec.base.debug.crash_at_step: must fit in an int32 (-2147483648 to 2147483647), got "
            "4294967297");
}

// A proto2 message with what trainer.proto lacks: uint32, sint32, a group, a packed int32, a
// recursive field.
const Descriptor& Probe() {
  static const Descriptor* type = [] {
    google::protobuf::FileDescriptorProto file;
    file.set_name("wire_check_probe.proto");
    file.set_package("probe");
    file.set_syntax("proto2");
    google::protobuf::DescriptorProto* probe = file.add_message_type();
    probe->set_name("Probe");
    auto add = [](google::protobuf::DescriptorProto* message, const char* name, int number,
                  FieldDescriptorProto::Type type, bool repeated = false) {
      FieldDescriptorProto* field = message->add_field();
      field->set_name(name);
      field->set_number(number);
      field->set_type(type);
      field->set_label(repeated ? FieldDescriptorProto::LABEL_REPEATED
                                : FieldDescriptorProto::LABEL_OPTIONAL);
      return field;
    };
    add(probe, "u", 1, FieldDescriptorProto::TYPE_UINT32);
    add(probe, "s", 2, FieldDescriptorProto::TYPE_SINT32);
    add(probe, "packed", 3, FieldDescriptorProto::TYPE_INT32, true)
        ->mutable_options()
        ->set_packed(true);
    add(probe, "plain", 4, FieldDescriptorProto::TYPE_INT32, true);
    google::protobuf::DescriptorProto* group = probe->add_nested_type();
    group->set_name("G");
    add(group, "x", 6, FieldDescriptorProto::TYPE_INT32);
    add(probe, "g", 5, FieldDescriptorProto::TYPE_GROUP)->set_type_name(".probe.Probe.G");
    add(probe, "child", 7, FieldDescriptorProto::TYPE_MESSAGE)->set_type_name(".probe.Probe");
    add(probe, "big", 8, FieldDescriptorProto::TYPE_INT64);
    auto* pool = new google::protobuf::DescriptorPool;
    const google::protobuf::FileDescriptor* built = pool->BuildFile(file);
    return built == nullptr ? nullptr : built->FindMessageTypeByName("Probe");
  }();
  EXPECT_NE(type, nullptr);
  return *type;
}

TEST(WireCheckTest, Uint32Sint32GroupsAndDepth) {
  const Descriptor& probe = Probe();
  const uint64_t two_32 = uint64_t{1} << 32;
  EXPECT_TRUE(Check(probe, Wire().Varint(1, two_32 - 1)).ok());
  EXPECT_EQ(Check(probe, Wire().Varint(1, two_32)).message(),
            "u: must fit in a uint32 (0 to 4294967295), got 4294967296");
  EXPECT_TRUE(Check(probe, Wire().Varint(2, two_32 - 1)).ok());  // zigzag of -2^31
  EXPECT_EQ(Check(probe, Wire().Varint(2, two_32)).message(),
            "s: must fit in an sint32 (-2147483648 to 2147483647), got 2147483648");
  EXPECT_EQ(Check(probe, Wire().Varint(2, two_32 + 1)).message(),
            "s: must fit in an sint32 (-2147483648 to 2147483647), got -2147483649");
  EXPECT_EQ(Check(probe, Wire().Bytes(3, Packed({1, uint64_t{1} << 40}))).message(),
            "packed[1]: must fit in an int32 (-2147483648 to 2147483647), got 1099511627776");
  EXPECT_EQ(Check(probe, Wire().Varint(4, 1).Varint(4, 2).Varint(4, two_32)).message(),
            "plain[2]: must fit in an int32 (-2147483648 to 2147483647), got 4294967296");
  EXPECT_EQ(Check(probe, Wire().Tag(5, kStartGroup).Varint(6, two_32).Tag(5, kEndGroup)).message(),
            "g.x: must fit in an int32 (-2147483648 to 2147483647), got 4294967296");
  EXPECT_EQ(Check(probe, Wire().Message(7, Wire().Message(7, Wire().Varint(1, two_32)))).message(),
            "child.child.u: must fit in a uint32 (0 to 4294967295), got 4294967296");
  EXPECT_TRUE(Check(probe, Wire().Varint(8, uint64_t{1} << 60)).ok());  // an int64

  auto nested = [](int depth) {
    Wire wire = Wire().Varint(1, 1);
    for (int i = 0; i < depth; ++i) wire = Wire().Message(7, wire);
    return wire;
  };
  EXPECT_TRUE(Check(probe, nested(100)).ok());
  const absl::Status deep = Check(probe, nested(101));
  EXPECT_EQ(deep.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(deep.message().find("nested more than 100 deep"), absl::string_view::npos) << deep;
}

// Protobuf keeps unknown fields, and fields sent with another wire type than theirs, as unknown:
// nothing in them reaches a field, so nothing there is refused.
TEST(WireCheckTest, UnknownFieldsAndOtherWireTypesAreSkipped) {
  const Wire wire =
      Wire()
          .Varint(999, std::numeric_limits<uint64_t>::max())
          .Bytes(1000, "anything")
          .Tag(1001, kFixed32)
          .Raw("\x01\x02\x03\x04")
          .Tag(1002, kFixed64)
          .Raw(std::string(8, '\xff'))
          .Tag(1003, kStartGroup)
          .Varint(1, uint64_t{1} << 60)
          .Tag(4, kStartGroup)
          .Tag(4, kEndGroup)
          .Tag(1003, kEndGroup)
          // batch_size as a fixed32: not batch_size to protobuf
          .Message(kSubmitSpec, Wire().Tag(kSpecBatchSize, kFixed32).Raw("\xff\xff\xff\xff"));
  SubmitJobRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire.str()));
  EXPECT_FALSE(parsed.spec().has_batch_size());
  EXPECT_TRUE(Check(*SubmitJobRequest::descriptor(), wire).ok())
      << Check(*SubmitJobRequest::descriptor(), wire);
}

// Bytes that are no protobuf message: refused, as the parser refuses them.
TEST(WireCheckTest, MalformedBytesAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string("\x10\x80", 2), "a varint cut short"},
      {std::string("\x10") + std::string(10, '\x80') + "\x01", "over 10 bytes"},
      {std::string("\x0a\x05", 2) + "ab", "a length past the end"},
      {std::string("\x0f", 1), "wire type 7"},
      {std::string("\x00", 1), "field number 0"},
      {std::string("\x0c", 1), "an end-group tag without its start"},
      {std::string("\x0b\x10\x01", 3), "a group without its end"},
      {std::string("\x0d\x01\x02", 3), "a fixed-size value cut short"},
  };
  for (const auto& [bytes, says] : cases) {
    SubmitJobRequest parsed;
    EXPECT_FALSE(parsed.ParseFromString(bytes)) << says;
    const absl::Status status = CheckVarintWidths(*SubmitJobRequest::descriptor(), bytes);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << says;
    EXPECT_EQ(status.message().rfind("not a valid trainer.v1.SubmitJobRequest: ", 0), 0u) << status;
    EXPECT_NE(status.message().find(says), absl::string_view::npos) << status;
  }
}

}  // namespace
}  // namespace traind
