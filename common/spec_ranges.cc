#include "common/spec_ranges.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "common/job_spec.h"
#include "common/status_macros.h"

namespace traind {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using trainer::v1::JobSpec;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

SpecFieldRange Integers(const char* field, int64_t min, int64_t max) {
  SpecFieldRange range{field, SpecFieldRange::Kind::kInteger};
  range.int_min = min;
  range.int_max = max;
  return range;
}

enum class Ends { kClosed, kOpenBelow, kOpenAbove };

SpecFieldRange Reals(const char* field, double min, double max, Ends ends = Ends::kClosed,
                     const char* note = nullptr) {
  SpecFieldRange range{field, SpecFieldRange::Kind::kReal};
  range.real_min = min;
  range.real_max = max;
  range.real_min_open = ends == Ends::kOpenBelow;
  range.real_max_open = ends == Ends::kOpenAbove;
  range.note = note;
  return range;
}

// Integral values as integers ("1000000", not "1e+06"); the others as StrCat writes them.
std::string FormatReal(double value) {
  if (std::isfinite(value) && value == std::floor(value) && std::abs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  return absl::StrCat(value);
}

// A row with its path resolved to descriptors once.
struct ResolvedRow {
  const SpecFieldRange* range;
  std::vector<const FieldDescriptor*> path;
};

const std::vector<ResolvedRow>& ResolvedRows() {
  static const auto* rows = [] {
    auto* resolved = new std::vector<ResolvedRow>;
    for (const SpecFieldRange& range : SpecFieldRanges()) {
      ResolvedRow row{&range, {}};
      const Descriptor* message = JobSpec::descriptor();
      for (absl::string_view part : absl::StrSplit(range.field, '.')) {
        const FieldDescriptor* field =
            message == nullptr ? nullptr : message->FindFieldByName(std::string(part));
        if (field == nullptr) {
          row.path.clear();  // a stale row: spec_ranges_test names it
          break;
        }
        row.path.push_back(field);
        message = field->message_type();
      }
      if (!row.path.empty()) resolved->push_back(std::move(row));
    }
    return resolved;
  }();
  return *rows;
}

absl::Status Refuse(const SpecFieldRange& range, const std::string& got) {
  std::string message =
      absl::StrCat(range.field, ": must be ", DescribeRange(range), ", got ", got);
  if (range.note != nullptr) absl::StrAppend(&message, " ", range.note);
  return absl::InvalidArgumentError(message);
}

absl::Status CheckInteger(const SpecFieldRange& range, int64_t value) {
  if (range.kind != SpecFieldRange::Kind::kInteger) return absl::OkStatus();
  if (value >= range.int_min && value <= range.int_max) return absl::OkStatus();
  return Refuse(range, absl::StrCat(value));
}

absl::Status CheckReal(const SpecFieldRange& range, double value) {
  if (range.kind != SpecFieldRange::Kind::kReal) return absl::OkStatus();
  // Written so that NaN, which compares false with everything, is refused.
  const bool above_min = range.real_min_open ? value > range.real_min : value >= range.real_min;
  const bool below_max = range.real_max_open ? value < range.real_max : value <= range.real_max;
  if (above_min && below_max) return absl::OkStatus();
  return Refuse(range, FormatReal(value));
}

// `index` < 0: the singular field's value; else that element of the repeated field.
absl::Status CheckValue(const SpecFieldRange& range, const Message& message,
                        const FieldDescriptor* field, int index) {
  const Reflection* r = message.GetReflection();
  const bool repeated = index >= 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return CheckInteger(range, repeated ? r->GetRepeatedInt32(message, field, index)
                                          : r->GetInt32(message, field));
    case FieldDescriptor::CPPTYPE_INT64:
      return CheckInteger(range, repeated ? r->GetRepeatedInt64(message, field, index)
                                          : r->GetInt64(message, field));
    case FieldDescriptor::CPPTYPE_UINT32:
      return CheckInteger(range, repeated ? r->GetRepeatedUInt32(message, field, index)
                                          : r->GetUInt32(message, field));
    case FieldDescriptor::CPPTYPE_UINT64: {
      const uint64_t value =
          repeated ? r->GetRepeatedUInt64(message, field, index) : r->GetUInt64(message, field);
      // Every row's bounds are int64s: a larger value is above any of them.
      if (value > static_cast<uint64_t>(kInt64Max)) {
        return range.kind == SpecFieldRange::Kind::kInteger ? Refuse(range, absl::StrCat(value))
                                                            : absl::OkStatus();
      }
      return CheckInteger(range, static_cast<int64_t>(value));
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return CheckReal(range, repeated ? r->GetRepeatedDouble(message, field, index)
                                       : r->GetDouble(message, field));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return CheckReal(range, repeated ? r->GetRepeatedFloat(message, field, index)
                                       : r->GetFloat(message, field));
    default:
      return absl::OkStatus();  // not a number (spec_ranges_test keeps rows on numbers)
  }
}

absl::Status CheckPath(const SpecFieldRange& range, const Message& message,
                       absl::Span<const FieldDescriptor* const> path) {
  const FieldDescriptor* field = path.front();
  const Reflection* r = message.GetReflection();
  if (path.size() == 1) {
    if (field->is_repeated()) {
      for (int i = 0; i < r->FieldSize(message, field); ++i) {
        RETURN_IF_ERROR(CheckValue(range, message, field, i));
      }
      return absl::OkStatus();
    }
    if (field->has_presence() && !r->HasField(message, field)) return absl::OkStatus();
    return CheckValue(range, message, field, -1);
  }
  if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) return absl::OkStatus();
  if (field->is_repeated()) {
    for (int i = 0; i < r->FieldSize(message, field); ++i) {
      RETURN_IF_ERROR(CheckPath(range, r->GetRepeatedMessage(message, field, i), path.subspan(1)));
    }
    return absl::OkStatus();
  }
  if (!r->HasField(message, field)) return absl::OkStatus();
  return CheckPath(range, r->GetMessage(message, field), path.subspan(1));
}

}  // namespace

const std::vector<SpecFieldRange>& SpecFieldRanges() {
  static const auto* table = new std::vector<SpecFieldRange>{
      Integers("epochs", 1, kMaxEpochs),
      Integers("batch_size", 1, 1 << 20),
      // 1e30 is far past any rate that trains, and the divergence tests' "absurd but finite"
      // rate; what LibTorch cannot hold is a rate beyond float (3.4e38): "float overflow".
      Reals("learning_rate", 0, 1e30, Ends::kOpenBelow),
      // Any non-negative int64: what every store and client of a 64-bit integer can hold.
      Integers("seed", 0, kInt64Max),
      Integers("limit_train", 0, kInt32Max),  // 0: all
      Integers("limit_test", 0, kInt32Max),
      Integers("log_every", 1, 1000000),
      Integers("threads", 1, 1024),
      // 1 or more never decays the velocity: the weights run away.
      Reals("momentum", 0, 1, Ends::kOpenAbove),
      Reals("weight_decay", 0, 1),
      Integers("image_size", 1, 1024),
      Integers("num_samples", 1, 10000000),
      Integers("channels", 1, 64),
      Integers("classes", 1, 100000),
      // Every training image is padded to (size + 2 N)^2 first: unbounded, the tensor's size
      // overflowed ("storage size overflowed").
      Integers("random_crop_padding", 0, 256),
      Integers("accumulate", 1, 1024),
      Integers("eval_every", 1, kMaxEpochs),
      Integers("checkpoint_every", 0, kMaxEpochs),     // 0: only every --checkpoint-minutes
      Integers("profile_steps", 1, 10000),             // each step's events stay in memory
      Reals("warmup_epochs", 0, kMaxEpochs),           // and at most epochs (job_spec.cc)
      Integers("lr_step_epochs", 0, kMaxEpochs),       // 0: a third of the epochs
      Reals("lr_step_gamma", 0, 1, Ends::kOpenBelow),  // a decay; 0 would stop training
      Reals("label_smoothing", 0, 1, Ends::kOpenAbove),
      Reals("clip_grad_norm", 0, 1e6),  // 0: off
      Reals("stop_at_accuracy", 0, 1, Ends::kClosed, "(a fraction: 0.89 for 89%)"),
      Integers("early_stop_patience", 0, kMaxEpochs),
      Integers("processes", 0, kMaxProcesses),
      Integers("gpus", 0, kMaxProcesses),
      // Slurm's nodes; a local job's (traind hosts) are held to 16 by job_spec.cc.
      Integers("nodes", 0, kMaxProcesses),
      Integers("gpus_per_node", 0, 16),
      Integers("benchmark.size", 1, 65536),  // three 65536^2 fp32 matrices: 48 GiB
      Integers("benchmark.repeat", 1, 10000),
      Integers("benchmark.warmup", 0, 10000),
      Integers("benchmark.steps", 1, 100000),
      Integers("debug.crash_at_step", 0, kInt32Max),
      Integers("debug.step_delay_ms", 0, 1000),
  };
  return *table;
}

const SpecFieldRange* FindSpecFieldRange(absl::string_view field) {
  for (const SpecFieldRange& range : SpecFieldRanges()) {
    if (field == range.field) return &range;
  }
  return nullptr;
}

std::string DescribeRange(const SpecFieldRange& range) {
  if (range.kind == SpecFieldRange::Kind::kInteger) {
    return absl::StrCat(range.int_min, " to ", range.int_max);
  }
  if (!range.real_min_open && !range.real_max_open) {
    return absl::StrCat(FormatReal(range.real_min), " to ", FormatReal(range.real_max));
  }
  return absl::StrCat(range.real_min_open ? "greater than " : "", FormatReal(range.real_min),
                      range.real_min_open ? "" : " or more", " and ",
                      range.real_max_open ? "less than " : "at most ", FormatReal(range.real_max));
}

absl::Status CheckSpecRanges(const JobSpec& spec) {
  for (const ResolvedRow& row : ResolvedRows()) {
    RETURN_IF_ERROR(CheckPath(*row.range, spec, row.path));
  }
  return absl::OkStatus();
}

absl::Status CheckSpecFieldRange(const JobSpec& spec, absl::string_view field) {
  for (const ResolvedRow& row : ResolvedRows()) {
    if (field == row.range->field) return CheckPath(*row.range, spec, row.path);
  }
  return absl::OkStatus();
}

}  // namespace traind
