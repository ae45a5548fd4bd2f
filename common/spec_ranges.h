// The allowed range of every numeric field of JobSpec and of the messages inside it (benchmark,
// debug): one table, the only home of those limits. ValidateJobSpec checks a spec against it,
// ExpandSweep checks each sweep axis value against it, and spec_ranges_test walks JobSpec's
// descriptor and fails for a numeric field without a row, so a new field cannot arrive unbounded.
//
// The limits are what a user could mean (an epoch count, a padding in pixels) and what a worker
// can run: a value accepted here must not fail at run time for being too large (a learning rate
// that overflows float, a padding whose tensor size overflows). Rules that relate two fields
// (warmup_epochs <= epochs, nodes on a local job) stay in job_spec.cc.
//
// Constant data and pure functions; thread-safe.
#ifndef TRAIND_COMMON_SPEC_RANGES_H_
#define TRAIND_COMMON_SPEC_RANGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// One row: a field and the values it may take.
struct SpecFieldRange {
  enum class Kind { kInteger, kReal };

  const char* field;  // path from JobSpec: "batch_size", "benchmark.size"
  Kind kind;          // kInteger for integer fields, kReal for double and float ones
  // kInteger: int_min to int_max, both allowed.
  int64_t int_min = 0;
  int64_t int_max = 0;
  // kReal: real_min to real_max, each allowed unless its *_open flag is set; NaN never is.
  double real_min = 0;
  double real_max = 0;
  bool real_min_open = false;
  bool real_max_open = false;
  const char* note = nullptr;  // appended to the refusal, e.g. "(a fraction: 0.89 for 89%)"
};

// Every row: JobSpec's own fields in the proto's order, then benchmark's and debug's.
const std::vector<SpecFieldRange>& SpecFieldRanges();

// The row of `field` (a path as in the table: "benchmark.size"); nullptr when there is none.
const SpecFieldRange* FindSpecFieldRange(absl::string_view field);

// The allowed values in words: "1 to 1048576", "greater than 0 and at most 1e+30",
// "0 or more and less than 1".
std::string DescribeRange(const SpecFieldRange& range);

// INVALID_ARGUMENT naming the first field of `spec` (in table order) outside its range:
// "batch_size: must be 1 to 1048576, got 2000000". A field with presence (`optional`, or inside
// an unset benchmark / debug) is checked only when set; the others always, their unset value 0
// being inside every such field's range. Works on partial specs (a sweep's base or configs).
absl::Status CheckSpecRanges(const trainer::v1::JobSpec& spec);

// The same for one field of the table (OK for a field without a row, or one that is unset).
absl::Status CheckSpecFieldRange(const trainer::v1::JobSpec& spec, absl::string_view field);

}  // namespace traind

#endif  // TRAIND_COMMON_SPEC_RANGES_H_
