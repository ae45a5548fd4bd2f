// Reads a job file into a JobSpec (or a sweep file into a SweepSpec): JSON or YAML, both through
// protobuf's JSON mapping (YAML is converted to JSON first), so there is one schema and no second
// parser. Any bytes give a Status, never a crash (fuzz/job_file_fuzzer.cc).
#ifndef TRAIND_CLIENT_JOB_FILE_H_
#define TRAIND_CLIENT_JOB_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// INVALID_ARGUMENT names the file and what is wrong (unknown field, bad value, bad syntax).
absl::Status LoadJobFile(const std::string& path, trainer::v1::JobSpec* spec);
// The same for a file's text (the fuzz target's entry point); errors do not name a file.
absl::Status ParseJobFile(const std::string& text, trainer::v1::JobSpec* spec);

// A sweep file (YAML/JSON: base, grid {field: [values]}, configs, repeat, name) -> SweepSpec.
absl::Status LoadSweepFile(const std::string& path, trainer::v1::SweepSpec* spec);
absl::Status ParseSweepFile(const std::string& text, trainer::v1::SweepSpec* spec);

// YAML mapping -> JSON object text. Scalars that look like numbers or booleans stay unquoted.
absl::Status YamlToJson(const std::string& yaml, std::string* json);

}  // namespace traind

#endif  // TRAIND_CLIENT_JOB_FILE_H_
