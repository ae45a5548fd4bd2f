// Sets a JobSpec field from text by its name, through protobuf reflection, so sweeps can vary
// any field ("batch_size" or "batchSize" = "64") without a table of fields to keep in sync.
// "param.NAME" is a script job's placeholder value (ScriptSpec.params: `--param NAME=...`).
#ifndef TRAIND_COMMON_SPEC_FIELDS_H_
#define TRAIND_COMMON_SPEC_FIELDS_H_

#include <string>

#include "absl/status/status.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// INVALID_ARGUMENT naming the field when it is unknown, not a scalar, or the value does not parse.
// batch_size also takes "auto" (sets batch_size_auto; a number clears it). Only the field's type
// is checked here; its range is CheckSpecFieldRange's (common/spec_ranges.h).
absl::Status SetSpecField(trainer::v1::JobSpec* spec, const std::string& field,
                          const std::string& value);

// The field's value as text ("" when unset), for labels like "batch_size=64" ("auto" when the
// batch size is searched).
std::string GetSpecField(const trainer::v1::JobSpec& spec, const std::string& field);

// The canonical (snake_case) name of a field given in either spelling; "" when unknown.
std::string CanonicalSpecField(const std::string& field);

}  // namespace traind

#endif  // TRAIND_COMMON_SPEC_FIELDS_H_
