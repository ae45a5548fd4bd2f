// Reads a job file into a JobSpec: JSON or YAML, both through protobuf's JSON mapping of JobSpec
// (YAML is converted to JSON first), so there is one schema and no second parser.
#ifndef TRAIND_CLIENT_JOB_FILE_H_
#define TRAIND_CLIENT_JOB_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// INVALID_ARGUMENT names the file and what is wrong (unknown field, bad value, bad syntax).
absl::Status LoadJobFile(const std::string& path, trainer::v1::JobSpec* spec);

// YAML mapping -> JSON object text. Scalars that look like numbers or booleans stay unquoted.
absl::Status YamlToJson(const std::string& yaml, std::string* json);

}  // namespace traind

#endif  // TRAIND_CLIENT_JOB_FILE_H_
