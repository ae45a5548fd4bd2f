// Checks a trainctl command line's words against the verbs and options the app defines, before
// CLI11 parses it, so that a typo is named as one: "unknown option --modle; did you mean
// --model?" instead of CLI11 taking the option's value for a positional ("job_file: File does
// not exist: mlp") or reporting a missing subcommand. Stateless; any thread.
#ifndef TRAIND_CLIENT_COMMAND_WORDS_H_
#define TRAIND_CLIENT_COMMAND_WORDS_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "common/nearest_word.h"

namespace traind {

// The verb `args` name (the innermost subcommand, e.g. `context add`'s app) and the index in
// `args` just after its word; the root app and 1 when no verb is named.
struct VerbAt {
  const CLI::App* verb;
  size_t after;
};

// The verb `args` (args[0] is the program's name) names, or INVALID_ARGUMENT naming the first
// unknown verb or option with the nearest known one when there is a near one. Words after "--"
// belong to a user's program and are not looked at; neither are option values and positionals.
absl::StatusOr<VerbAt> ReadCommandWords(const CLI::App& app, const std::vector<std::string>& args);

// `parent`'s subcommand called `name` (or an alias), or nullptr; the names of all of them.
const CLI::App* SubcommandNamed(const CLI::App& parent, const std::string& name);
std::vector<std::string> SubcommandNames(const CLI::App& parent);
// `app`'s own option --`flag` (no dashes given), or nullptr.
const CLI::Option* LongOptionNamed(const CLI::App& app, const std::string& flag);
// Whether the option takes a value (a switch takes none).
bool TakesValue(const CLI::Option& option);

// Where a word given for a file names no file but is a model's or dataset's name ("mlp"), the
// flag it was meant for: " (did you mean --model mlp?)"; "" otherwise.
std::string FlagForName(const std::string& word);

}  // namespace traind

#endif  // TRAIND_CLIENT_COMMAND_WORDS_H_
