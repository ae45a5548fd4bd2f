// The JobSpec flags of `submit`, `bench` and `sweep`: one table maps each command-line flag onto
// its JobSpec field, so a new job option is one row here (plus the proto field), not an edit in
// every command. Values go through SetSpecField, which parses them by the field's type and names
// the field in its error. Flags the user did not give leave the field alone.
#ifndef TRAIND_CLIENT_SPEC_FLAGS_H_
#define TRAIND_CLIENT_SPEC_FLAGS_H_

#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct SpecFlagInfo {
  const char* flag;         // "--batch-size"
  const char* field;        // the JobSpec field it sets: "batch_size"
  const char* help;         // nullptr: the catalog's names (--model, --dataset)
  bool is_switch;           // takes no value and sets a bool field (--hflip)
  bool training_only;       // not offered by `bench train`
  bool sets_false = false;  // a switch that sets its field false (--no-cuda-graph)
};

// Every row, in the order `--help` lists them.
const std::vector<SpecFlagInfo>& SpecFlagTable();
// The row's help; --model and --dataset list the catalog (common/catalog.h), so a new kind
// appears by itself.
std::string SpecFlagHelp(const SpecFlagInfo& row);
// The value's kind for --help: INT, NUMBER, NAME, FILE, DIR, TEXT ("" for a switch), from the
// JobSpec field's type (CLI11 would call every one TEXT: the values are parsed later).
std::string SpecFlagTypeName(const SpecFlagInfo& row);
// The --help heading the row is listed under ("Model and data", "Optimiser and learning rate"...).
std::string SpecFlagSection(const SpecFlagInfo& row);

// What the user typed, by flag.
struct SpecFlags {
  std::map<std::string, std::string> values;
  std::map<std::string, bool> switches;
  CLI::App* app = nullptr;
};

// `training`: add the training-loop flags too (not only model, data and device).
void AddSpecFlags(CLI::App* app, SpecFlags* flags, bool training = true);
// Only the named flags (`bench matmul` takes --device and --threads).
void AddSpecFlags(CLI::App* app, SpecFlags* flags, const std::vector<std::string>& only);

// Whether the user gave any of the spec flags.
bool AnySpecFlagGiven(const SpecFlags& flags);

// Applies the given flags to `spec`, makes data_dir absolute, and validates the result as the
// daemon will (INVALID_ARGUMENT naming the field). model_file and data_file may still name local
// files here: ResolveSpecFiles (spec_files.h) uploads them before the spec is sent.
absl::Status ApplySpecFlags(const SpecFlags& flags, trainer::v1::JobSpec* spec);

// A model_file / data_file value that names a file rather than an uploaded blob ("sha256:...").
bool IsLocalFile(const std::string& spec_value);
// An init_from that names neither a job (it starts with a digit: JOB[:best|final]) nor a blob
// (sha256:...): a file to upload (a file whose name starts with a digit is written ./7.pt).
bool IsLocalWeights(const std::string& init_from);

}  // namespace traind

#endif  // TRAIND_CLIENT_SPEC_FLAGS_H_
