#include "common/spec_fields.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/script_spec.h"
#include "common/spec_ranges.h"
#include "common/status_macros.h"

namespace traind {

namespace {

using google::protobuf::FieldDescriptor;

const FieldDescriptor* FindField(const std::string& name) {
  const auto* descriptor = trainer::v1::JobSpec::descriptor();
  std::string snake = absl::StrReplaceAll(name, {{"-", "_"}});
  // trainctl's flag names, where they differ from the fields'.
  if (snake == "lr") snake = "learning_rate";
  if (snake == "random_crop") snake = "random_crop_padding";
  if (snake == "hflip") snake = "horizontal_flip";
  if (const FieldDescriptor* f = descriptor->FindFieldByName(snake)) return f;
  return descriptor->FindFieldByCamelcaseName(name);
}

}  // namespace

// "param.NAME": a script job's placeholder value (ScriptSpec.params), swept like a field.
constexpr absl::string_view kParamPrefix = "param.";

std::string CanonicalSpecField(const std::string& field) {
  if (absl::StartsWith(field, kParamPrefix)) {
    return ValidateParamName("param", field.substr(kParamPrefix.size())).ok() ? field : "";
  }
  const FieldDescriptor* f = FindField(field);
  return f == nullptr ? "" : f->name();
}

absl::Status SetSpecField(trainer::v1::JobSpec* spec, const std::string& field,
                          const std::string& value) {
  if (absl::StartsWith(field, kParamPrefix)) {
    const std::string name = field.substr(kParamPrefix.size());
    RETURN_IF_ERROR(ValidateParamName(field, name));
    (*spec->mutable_script()->mutable_params())[name] = value;
    return absl::OkStatus();
  }
  const FieldDescriptor* f = FindField(field);
  if (f == nullptr || f->is_repeated() || f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": not a JobSpec field that can take a value (docs/jobs.md)"));
  }
  if (f->name() == "batch_size") {
    // As `trainctl submit --batch-size auto`: the size search; a number turns the search off.
    int32_t size = 0;
    if (value == "auto") {
      spec->set_batch_size_auto(true);
    } else if (absl::SimpleAtoi(value, &size)) {
      spec->set_batch_size(size);
      spec->set_batch_size_auto(false);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("batch_size: expected 'auto' or an integer from ",
                       DescribeRange(*FindSpecFieldRange("batch_size")), ", got '", value, "'"));
    }
    return absl::OkStatus();
  }
  const auto* reflection = spec->GetReflection();
  auto bad = [&](const char* what) {
    return absl::InvalidArgumentError(absl::StrCat(f->name(), ": '", value, "' is not ", what));
  };
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t v;
      if (!absl::SimpleAtoi(value, &v)) return bad("an integer from -2147483648 to 2147483647");
      reflection->SetInt32(spec, f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v;
      if (!absl::SimpleAtoi(value, &v)) return bad("a 64-bit integer");
      reflection->SetInt64(spec, f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v;
      if (!absl::SimpleAtoi(value, &v)) return bad("an integer from 0 to 18446744073709551615");
      reflection->SetUInt64(spec, f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      double v;
      if (!absl::SimpleAtod(value, &v)) return bad("a number");
      reflection->SetDouble(spec, f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool v;
      if (!absl::SimpleAtob(value, &v)) return bad("true or false");
      reflection->SetBool(spec, f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_STRING:
      reflection->SetString(spec, f, value);
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(f->name(), ": cannot be swept"));
  }
  return absl::OkStatus();
}

std::string GetSpecField(const trainer::v1::JobSpec& spec, const std::string& field) {
  if (absl::StartsWith(field, kParamPrefix)) {
    const auto it = spec.script().params().find(field.substr(kParamPrefix.size()));
    return it == spec.script().params().end() ? "" : it->second;
  }
  const FieldDescriptor* f = FindField(field);
  if (f == nullptr || f->is_repeated() || f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE)
    return "";
  if (f->name() == "batch_size" && spec.batch_size_auto()) return "auto";
  const auto* reflection = spec.GetReflection();
  if (f->has_presence() && !reflection->HasField(spec, f)) return "";
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(reflection->GetInt32(spec, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(reflection->GetInt64(spec, f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(reflection->GetUInt64(spec, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return absl::StrCat(reflection->GetDouble(spec, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return reflection->GetBool(spec, f) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_STRING:
      return reflection->GetString(spec, f);
    default:
      return "";
  }
}

}  // namespace traind
