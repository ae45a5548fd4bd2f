#include "common/message_bounds.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace traind {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Fields whose bound is not the default, by field name (the same name means the same thing in
// every message that has it).
struct Bound {
  absl::string_view field;
  size_t max;
};
constexpr Bound kStringBounds[] = {
    {"data_dir", 4096},   // a path (PATH_MAX)
    {"data_file", 4096},  // a path or a blob digest
    {"values", 4096},     // a sweep axis value may be a path
    {"devices", 1024},    // up to kMaxProcesses "cuda:N," entries
    {"chunk", 4 << 20},   // an upload's piece (UploadReactor also checks it)
    {"args", 8192},       // a script's word (kMaxScriptArgBytes)
    {"path", 1024},       // a file of a script's working directory (kMaxScriptPathBytes)
};
constexpr Bound kRepeatedBounds[] = {
    {"values", 10000},   // of one sweep axis; the product is bounded by kMaxSweepMembers
    {"configs", 10000},  // of a sweep
    {"axes", 32},       {"args", 1024},  // a script's words (kMaxScriptArgs)
    {"files", 20000},                    // a script's working directory (kMaxScriptFiles)
};

size_t StringBound(absl::string_view name) {
  for (const Bound& bound : kStringBounds) {
    if (bound.field == name) return bound.max;
  }
  return kDefaultMaxStringBytes;
}

size_t RepeatedBound(absl::string_view name) {
  for (const Bound& bound : kRepeatedBounds) {
    if (bound.field == name) return bound.max;
  }
  return kDefaultMaxRepeated;
}

absl::Status TooLong(const std::string& path, size_t max, size_t got, const char* unit) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": at most ", max, " ", unit, ", got ", got));
}

absl::Status Check(const Message& message, const std::string& prefix) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);  // only those set: cheap for small requests
  for (const FieldDescriptor* field : fields) {
    const std::string path =
        prefix.empty() ? field->name() : absl::StrCat(prefix, ".", field->name());
    const bool is_string = field->cpp_type() == FieldDescriptor::CPPTYPE_STRING;
    const bool is_message = field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (field->is_repeated()) {
      const size_t count = static_cast<size_t>(reflection->FieldSize(message, field));
      if (count > RepeatedBound(field->name())) {
        return TooLong(path, RepeatedBound(field->name()), count, "entries");
      }
      for (size_t i = 0; i < count; ++i) {
        const std::string item = absl::StrCat(path, "[", i, "]");
        if (is_string) {
          std::string scratch;
          const std::string& value =
              reflection->GetRepeatedStringReference(message, field, static_cast<int>(i), &scratch);
          if (value.size() > StringBound(field->name())) {
            return TooLong(item, StringBound(field->name()), value.size(), "bytes");
          }
        } else if (is_message) {
          if (absl::Status status =
                  Check(reflection->GetRepeatedMessage(message, field, static_cast<int>(i)), item);
              !status.ok()) {
            return status;
          }
        }
      }
    } else if (is_string) {
      std::string scratch;
      const std::string& value = reflection->GetStringReference(message, field, &scratch);
      if (value.size() > StringBound(field->name())) {
        return TooLong(path, StringBound(field->name()), value.size(), "bytes");
      }
    } else if (is_message) {
      if (absl::Status status = Check(reflection->GetMessage(message, field), path); !status.ok()) {
        return status;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckMessageBounds(const Message& message) { return Check(message, ""); }

}  // namespace traind
