#include "common/wire_check.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace traind {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// Protobuf's default recursion limit (CodedInputStream's and the parse context's).
constexpr int kMaxDepth = 100;

enum WireType : int {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// One walk: the whole input, for offsets in messages about malformed bytes.
class Walk {
 public:
  Walk(const Descriptor& root, absl::string_view wire) : root_(root), wire_(wire) {}

  absl::Status Run() {
    absl::string_view in = wire_;
    return Message(&root_, &in, "", 0, 0);
  }

 private:
  // Fields of one message of `type` (nullptr: a group nobody declared, every field unknown)
  // from `*in`: to its end, or for a group (`end_group` > 0) to that field's end-group tag.
  // `prefix` names the message in paths: "" at the top, then "spec.", "spec.configs[2].".
  absl::Status Message(const Descriptor* type, absl::string_view* in, const std::string& prefix,
                       int depth, uint64_t end_group) {
    if (depth > kMaxDepth) return Malformed(*in, "messages nested more than 100 deep");
    // Occurrences so far of each field (by its index in `type`): a repeated field's element
    // index, counted over packed runs and single elements alike.
    std::vector<int> seen(type == nullptr ? 0 : type->field_count(), 0);
    while (!in->empty()) {
      const absl::string_view at = *in;
      uint64_t tag = 0;
      if (!ReadVarint(in, &tag) || tag > std::numeric_limits<uint32_t>::max()) {
        return Malformed(at, "a field tag that is no 32-bit varint");
      }
      const int wire_type = static_cast<int>(tag & 7);
      const uint64_t number = tag >> 3;
      if (wire_type == kEndGroup) {
        if (end_group != 0 && number == end_group) return absl::OkStatus();
        return Malformed(at, "an end-group tag without its start");
      }
      if (number == 0) return Malformed(at, "field number 0");
      const FieldDescriptor* field =
          type == nullptr ? nullptr : type->FindFieldByNumber(static_cast<int>(number));
      int* count = field == nullptr ? nullptr : &seen[field->index()];
      switch (wire_type) {
        case kVarint: {
          uint64_t value = 0;
          if (!ReadVarint(in, &value)) return Malformed(at, "a varint cut short or over 10 bytes");
          if (field != nullptr && IsNarrowVarint(*field)) {
            RETURN_IF_ERROR(CheckWidth(*field, value, prefix, Next(field, count)));
          }
          break;
        }
        case kFixed64:
        case kFixed32: {
          const size_t size = wire_type == kFixed64 ? 8 : 4;
          if (in->size() < size) return Malformed(at, "a fixed-size value cut short");
          in->remove_prefix(size);
          break;
        }
        case kLengthDelimited: {
          uint64_t length = 0;
          if (!ReadVarint(in, &length) || length > in->size()) {
            return Malformed(at, "a length past the end of the message");
          }
          absl::string_view body = in->substr(0, static_cast<size_t>(length));
          in->remove_prefix(static_cast<size_t>(length));
          if (field == nullptr) break;
          if (field->type() == FieldDescriptor::TYPE_MESSAGE) {
            RETURN_IF_ERROR(Message(field->message_type(), &body,
                                    absl::StrCat(Path(prefix, *field, Next(field, count)), "."),
                                    depth + 1, 0));
          } else if (field->is_repeated() && field->is_packable() && IsNarrowVarint(*field)) {
            while (!body.empty()) {  // packed: the elements' varints back to back
              const absl::string_view element = body;
              uint64_t value = 0;
              if (!ReadVarint(&body, &value)) {
                return Malformed(element, "a packed varint cut short");
              }
              RETURN_IF_ERROR(CheckWidth(*field, value, prefix, Next(field, count)));
            }
          }
          break;
        }
        case kStartGroup: {
          const Descriptor* group = field != nullptr && field->type() == FieldDescriptor::TYPE_GROUP
                                        ? field->message_type()
                                        : nullptr;
          const std::string group_prefix =
              group == nullptr ? "" : absl::StrCat(Path(prefix, *field, Next(field, count)), ".");
          RETURN_IF_ERROR(Message(group, in, group_prefix, depth + 1, number));
          break;
        }
        default:
          return Malformed(at, absl::StrCat("wire type ", wire_type));
      }
    }
    if (end_group != 0) return Malformed(*in, "a group without its end");
    return absl::OkStatus();
  }

  // As protobuf's parser reads one: at most 10 bytes, bits past the 64th dropped.
  static bool ReadVarint(absl::string_view* in, uint64_t* value) {
    uint64_t result = 0;
    for (int i = 0; i < 10; ++i) {
      if (in->empty()) return false;
      const uint8_t byte = static_cast<uint8_t>(in->front());
      in->remove_prefix(1);
      result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
      if (byte < 0x80) {
        *value = result;
        return true;
      }
    }
    return false;
  }

  static bool IsNarrowVarint(const FieldDescriptor& field) {
    switch (field.type()) {
      case FieldDescriptor::TYPE_INT32:
      case FieldDescriptor::TYPE_ENUM:
      case FieldDescriptor::TYPE_UINT32:
      case FieldDescriptor::TYPE_SINT32:
      case FieldDescriptor::TYPE_BOOL:
        return true;
      default:
        return false;
    }
  }

  // The index of this occurrence of a repeated field (counting it), -1 for a singular one.
  static int Next(const FieldDescriptor* field, int* count) {
    return field->is_repeated() ? (*count)++ : -1;
  }

  // "spec.batch_size", "spec.configs[2]": the field's name in its message, with the element's
  // index for a repeated one.
  static std::string Path(const std::string& prefix, const FieldDescriptor& field, int index) {
    if (index < 0) return absl::StrCat(prefix, field.name());
    return absl::StrCat(prefix, field.name(), "[", index, "]");
  }

  // The path is built only for a refusal: most requests have no wide value, and many varints.
  static absl::Status CheckWidth(const FieldDescriptor& field, uint64_t value,
                                 const std::string& prefix, int index) {
    constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
    constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
    constexpr uint64_t kUint32Max = std::numeric_limits<uint32_t>::max();
    switch (field.type()) {
      case FieldDescriptor::TYPE_INT32:
      case FieldDescriptor::TYPE_ENUM: {
        const int64_t signed_value = static_cast<int64_t>(value);
        if (signed_value >= kInt32Min && signed_value <= kInt32Max) return absl::OkStatus();
        return absl::InvalidArgumentError(
            absl::StrCat(Path(prefix, field, index), ": must fit in an int32 (", kInt32Min, " to ",
                         kInt32Max, "), got ", signed_value,
                         value >= uint64_t{1} << 31 && value <= kUint32Max
                             ? " (a negative int32 is sent as 10 bytes, sign-extended)"
                             : ""));
      }
      case FieldDescriptor::TYPE_UINT32:
        if (value <= kUint32Max) return absl::OkStatus();
        return absl::InvalidArgumentError(absl::StrCat(Path(prefix, field, index),
                                                       ": must fit in a uint32 (0 to ", kUint32Max,
                                                       "), got ", value));
      case FieldDescriptor::TYPE_SINT32: {
        if (value <= kUint32Max) return absl::OkStatus();
        const int64_t decoded = static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
        return absl::InvalidArgumentError(absl::StrCat(Path(prefix, field, index),
                                                       ": must fit in an sint32 (", kInt32Min,
                                                       " to ", kInt32Max, "), got ", decoded));
      }
      case FieldDescriptor::TYPE_BOOL:
        if (value <= 1) return absl::OkStatus();
        return absl::InvalidArgumentError(absl::StrCat(
            Path(prefix, field, index), ": a bool is 0 or 1 on the wire, got ", value));
      default:
        return absl::OkStatus();
    }
  }

  absl::Status Malformed(absl::string_view at, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("not a valid ", root_.full_name(), ": ", what,
                                                   " at byte ", at.data() - wire_.data()));
  }

  const Descriptor& root_;
  const absl::string_view wire_;
};

}  // namespace

absl::Status CheckVarintWidths(const google::protobuf::Descriptor& descriptor,
                               absl::string_view wire) {
  return Walk(descriptor, wire).Run();
}

}  // namespace traind
