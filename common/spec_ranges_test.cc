#include "common/spec_ranges.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/job_spec.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using trainer::v1::JobSpec;

bool IsInteger(const FieldDescriptor& field) {
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return true;
    default:
      return false;
  }
}

bool IsReal(const FieldDescriptor& field) {
  return field.cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE ||
         field.cpp_type() == FieldDescriptor::CPPTYPE_FLOAT;
}

struct NumericField {
  std::string path;  // "batch_size", "benchmark.size"
  const FieldDescriptor* field;
};

// Every numeric field reachable from `message`, through every message field, depth first.
void CollectNumericFields(const Descriptor& message, const std::string& prefix,
                          std::set<const Descriptor*>* on_path, std::vector<NumericField>* out) {
  for (int i = 0; i < message.field_count(); ++i) {
    const FieldDescriptor* field = message.field(i);
    const std::string path = prefix + field->name();
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      const Descriptor* inner = field->message_type();
      if (!on_path->insert(inner).second) {
        ADD_FAILURE() << "JobSpec." << path << " is recursive: a range row needs a bounded path";
        continue;
      }
      CollectNumericFields(*inner, path + ".", on_path, out);
      on_path->erase(inner);
    } else if (IsInteger(*field) || IsReal(*field)) {
      out->push_back({path, field});
    }
  }
}

std::vector<NumericField> JobSpecNumericFields() {
  std::vector<NumericField> fields;
  std::set<const Descriptor*> on_path = {JobSpec::descriptor()};
  CollectNumericFields(*JobSpec::descriptor(), "", &on_path, &fields);
  return fields;
}

// The field at `path` in `spec`, creating the messages on the way.
std::pair<Message*, const FieldDescriptor*> Leaf(JobSpec* spec, const std::string& path) {
  Message* message = spec;
  const std::vector<std::string> parts = absl::StrSplit(path, '.');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(parts[i]);
    message = message->GetReflection()->MutableMessage(message, field);
  }
  return {message, message->GetDescriptor()->FindFieldByName(parts.back())};
}

// Sets the field at `path` to `value`; false when its type cannot hold the value.
bool SetInteger(JobSpec* spec, const std::string& path, int64_t value) {
  auto [message, field] = Leaf(spec, path);
  const Reflection* r = message->GetReflection();
  const bool repeated = field->is_repeated();
  if (repeated) r->ClearField(message, field);
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      if (value < std::numeric_limits<int32_t>::min() ||
          value > std::numeric_limits<int32_t>::max()) {
        return false;
      }
      repeated ? r->AddInt32(message, field, static_cast<int32_t>(value))
               : r->SetInt32(message, field, static_cast<int32_t>(value));
      return true;
    case FieldDescriptor::CPPTYPE_INT64:
      repeated ? r->AddInt64(message, field, value) : r->SetInt64(message, field, value);
      return true;
    case FieldDescriptor::CPPTYPE_UINT32:
      if (value < 0 || value > std::numeric_limits<uint32_t>::max()) return false;
      repeated ? r->AddUInt32(message, field, static_cast<uint32_t>(value))
               : r->SetUInt32(message, field, static_cast<uint32_t>(value));
      return true;
    case FieldDescriptor::CPPTYPE_UINT64:
      if (value < 0) return false;
      repeated ? r->AddUInt64(message, field, static_cast<uint64_t>(value))
               : r->SetUInt64(message, field, static_cast<uint64_t>(value));
      return true;
    default:
      ADD_FAILURE() << path << " is not an integer field";
      return false;
  }
}

void SetReal(JobSpec* spec, const std::string& path, double value) {
  auto [message, field] = Leaf(spec, path);
  const Reflection* r = message->GetReflection();
  if (field->is_repeated()) r->ClearField(message, field);
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
    field->is_repeated() ? r->AddFloat(message, field, static_cast<float>(value))
                         : r->SetFloat(message, field, static_cast<float>(value));
  } else {
    field->is_repeated() ? r->AddDouble(message, field, value)
                         : r->SetDouble(message, field, value);
  }
}

// The guard against a new number without a limit: adding a numeric field to JobSpec (or to a
// message inside it) without a row in common/spec_ranges.cc fails here.
TEST(SpecRangesTest, EveryNumericFieldOfJobSpecHasARow) {
  const std::vector<NumericField> fields = JobSpecNumericFields();
  ASSERT_GT(fields.size(), 30u);  // the walk found JobSpec's numbers
  for (const NumericField& f : fields) {
    const SpecFieldRange* range = FindSpecFieldRange(f.path);
    if (range == nullptr) {
      ADD_FAILURE() << "JobSpec." << f.path << " (" << f.field->type_name()
                    << ") has no range: add a row to SpecFieldRanges() in common/spec_ranges.cc "
                       "with the values a user could mean and a worker can run";
      continue;
    }
    EXPECT_EQ(range->kind,
              IsReal(*f.field) ? SpecFieldRange::Kind::kReal : SpecFieldRange::Kind::kInteger)
        << f.path << ": an integer field needs an integer row, a real one a real row";
  }
}

TEST(SpecRangesTest, EveryRowIsANumericFieldWithASensibleRange) {
  const std::vector<NumericField> fields = JobSpecNumericFields();
  std::set<std::string> seen;
  for (const SpecFieldRange& range : SpecFieldRanges()) {
    EXPECT_TRUE(seen.insert(range.field).second) << range.field << " has two rows";
    const NumericField* match = nullptr;
    for (const NumericField& f : fields) {
      if (f.path == range.field) match = &f;
    }
    if (match == nullptr) {
      ADD_FAILURE() << range.field << ": a row for no numeric field of JobSpec (renamed?)";
      continue;
    }
    if (range.kind == SpecFieldRange::Kind::kInteger) {
      EXPECT_LE(range.int_min, range.int_max) << range.field;
      // The field's type can hold both ends.
      JobSpec spec;
      EXPECT_TRUE(SetInteger(&spec, range.field, range.int_min)) << range.field;
      EXPECT_TRUE(SetInteger(&spec, range.field, range.int_max)) << range.field;
    } else {
      EXPECT_TRUE(std::isfinite(range.real_min) && std::isfinite(range.real_max)) << range.field;
      EXPECT_LT(range.real_min, range.real_max) << range.field;
      if (match->field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
        EXPECT_LE(range.real_max, std::numeric_limits<float>::max()) << range.field;
      }
    }
    // A field without presence reads 0 when unset, and is checked then too.
    if (!match->field->has_presence()) {
      const bool zero_allowed =
          range.kind == SpecFieldRange::Kind::kInteger
              ? range.int_min <= 0 && 0 <= range.int_max
              : (range.real_min_open ? range.real_min < 0 : range.real_min <= 0) &&
                    (range.real_max_open ? 0 < range.real_max : 0 <= range.real_max);
      EXPECT_TRUE(zero_allowed) << range.field << " has no presence: its range must allow 0";
    }
  }
}

// Each row's ends are accepted and the values just past them refused, with the message naming
// the field and the range: the same rule, whichever row.
TEST(SpecRangesTest, EveryRowAcceptsItsEndsAndRefusesJustPast) {
  for (const SpecFieldRange& range : SpecFieldRanges()) {
    const std::string prefix =
        absl::StrCat(range.field, ": must be ", DescribeRange(range), ", got ");
    if (range.kind == SpecFieldRange::Kind::kInteger) {
      for (int64_t inside : {range.int_min, range.int_max}) {
        JobSpec spec;
        ASSERT_TRUE(SetInteger(&spec, range.field, inside));
        EXPECT_TRUE(CheckSpecRanges(spec).ok()) << range.field << " = " << inside;
      }
      std::vector<int64_t> outside;
      if (range.int_min > std::numeric_limits<int64_t>::min()) outside.push_back(range.int_min - 1);
      if (range.int_max < std::numeric_limits<int64_t>::max()) outside.push_back(range.int_max + 1);
      for (int64_t value : outside) {
        JobSpec spec;
        if (!SetInteger(&spec, range.field, value)) continue;  // the type itself stops it
        const absl::Status status = CheckSpecRanges(spec);
        EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
            << range.field << " = " << value;
        EXPECT_EQ(status.message().rfind(absl::StrCat(prefix, value), 0), 0u) << status;
      }
      continue;
    }
    // The nearest values outside that the field's type can hold.
    JobSpec probe;
    const bool is_float =
        Leaf(&probe, range.field).second->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT;
    const double below = is_float ? std::nextafter(static_cast<float>(range.real_min), -HUGE_VALF)
                                  : std::nextafter(range.real_min, -HUGE_VAL);
    const double above = is_float ? std::nextafter(static_cast<float>(range.real_max), HUGE_VALF)
                                  : std::nextafter(range.real_max, HUGE_VAL);
    const std::vector<std::pair<double, bool>> cases = {
        {range.real_min, !range.real_min_open},
        {range.real_max, !range.real_max_open},
        {below, false},
        {above, false},
        {std::numeric_limits<double>::quiet_NaN(), false},
        {std::numeric_limits<double>::infinity(), false},
    };
    for (const auto& [value, allowed] : cases) {
      JobSpec spec;
      SetReal(&spec, range.field, value);
      const absl::Status status = CheckSpecRanges(spec);
      EXPECT_EQ(status.ok(), allowed) << range.field << " = " << value << ": " << status;
      if (!allowed) {
        EXPECT_EQ(status.message().rfind(prefix, 0), 0u) << status;
      }
    }
  }
}

TEST(SpecRangesTest, MessagesNameTheFieldTheRangeAndTheValue) {
  struct Case {
    std::string field;
    double value;
    std::string message;
  };
  const Case cases[] = {
      {"batch_size", 2000000, "batch_size: must be 1 to 1048576, got 2000000"},
      {"batch_size", 0, "batch_size: must be 1 to 1048576, got 0"},
      {"learning_rate", 1e300,
       "learning_rate: must be greater than 0 and at most 1e+30, got 1e+300"},
      {"learning_rate", 0, "learning_rate: must be greater than 0 and at most 1e+30, got 0"},
      {"label_smoothing", 1, "label_smoothing: must be 0 or more and less than 1, got 1"},
      {"clip_grad_norm", -1, "clip_grad_norm: must be 0 to 1000000, got -1"},
      {"stop_at_accuracy", 89,
       "stop_at_accuracy: must be 0 to 1, got 89 (a fraction: 0.89 for 89%)"},
      {"limit_train", -1, "limit_train: must be 0 to 2147483647, got -1"},
      {"benchmark.size", 65537, "benchmark.size: must be 1 to 65536, got 65537"},
      {"debug.crash_at_step", -1, "debug.crash_at_step: must be 0 to 2147483647, got -1"},
  };
  for (const Case& c : cases) {
    JobSpec spec;
    const SpecFieldRange* range = FindSpecFieldRange(c.field);
    ASSERT_NE(range, nullptr) << c.field;
    if (range->kind == SpecFieldRange::Kind::kInteger) {
      ASSERT_TRUE(SetInteger(&spec, c.field, static_cast<int64_t>(c.value)));
    } else {
      SetReal(&spec, c.field, c.value);
    }
    const absl::Status status = CheckSpecRanges(spec);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(status.message(), c.message);
  }
  // A seed is any non-negative int64: the uint64 above that is refused, as written.
  JobSpec spec;
  spec.set_seed(uint64_t{1} << 63);
  EXPECT_EQ(CheckSpecRanges(spec).message(),
            "seed: must be 0 to 9223372036854775807, got 9223372036854775808");
  spec.set_seed(std::numeric_limits<int64_t>::max());
  EXPECT_TRUE(CheckSpecRanges(spec).ok());
}

// An unset optional field is not checked (epochs' range excludes 0, which it reads); one set to
// a value outside is, however it came (JSON "epochs": 0 sets it).
TEST(SpecRangesTest, UnsetFieldsAreNotCheckedSetOnesAre) {
  JobSpec spec;
  spec.mutable_benchmark();  // present, every field unset
  spec.mutable_debug();      // present, every field 0
  EXPECT_TRUE(CheckSpecRanges(spec).ok()) << CheckSpecRanges(spec);
  spec.set_epochs(0);
  EXPECT_EQ(CheckSpecRanges(spec).message(), "epochs: must be 1 to 100000, got 0");
}

TEST(SpecRangesTest, TheDefaultsAreInRange) {
  std::vector<JobSpec> specs(4);
  specs[0].set_model("lenet5");
  specs[0].set_dataset("fashion-mnist");
  specs[1].set_model("mlp");
  specs[1].set_dataset("fake");
  specs[2].mutable_benchmark()->set_kind("matmul");
  specs[3].mutable_benchmark()->set_kind("train");
  for (JobSpec& spec : specs) {
    ApplyDefaults(&spec);
    EXPECT_TRUE(CheckSpecRanges(spec).ok()) << CheckSpecRanges(spec);
  }
}

TEST(SpecRangesTest, OneFieldAtATime) {
  JobSpec spec;
  spec.set_epochs(0);
  spec.set_batch_size(64);
  EXPECT_TRUE(CheckSpecFieldRange(spec, "batch_size").ok());
  EXPECT_EQ(CheckSpecFieldRange(spec, "epochs").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckSpecFieldRange(spec, "name").ok());     // no row: nothing to check
  EXPECT_TRUE(CheckSpecFieldRange(spec, "threads").ok());  // unset
}

TEST(SpecRangesTest, DescribeRange) {
  EXPECT_EQ(DescribeRange(*FindSpecFieldRange("batch_size")), "1 to 1048576");
  EXPECT_EQ(DescribeRange(*FindSpecFieldRange("learning_rate")),
            "greater than 0 and at most 1e+30");
  EXPECT_EQ(DescribeRange(*FindSpecFieldRange("momentum")), "0 or more and less than 1");
  EXPECT_EQ(DescribeRange(*FindSpecFieldRange("weight_decay")), "0 to 1");
  EXPECT_EQ(FindSpecFieldRange("nosuch"), nullptr);
}

}  // namespace
}  // namespace traind
