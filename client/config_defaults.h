// Default flags from trainctl's config file ([defaults.VERB] FLAG = VALUE, connect/config_file.h):
// checked against the verbs and options trainctl has, each mistake named with its file and line,
// and put on the command line as if typed, unless the command line gives the flag itself.
//
//   [defaults.submit]
//   device = "cpu"        # trainctl submit ...         -> trainctl submit --device cpu ...
//   epochs = 3            # trainctl submit --epochs 5  -> 5 (the command line wins)
//   [defaults.run]
//   watch = true          # a switch: true gives it, false leaves it out
#ifndef TRAIND_CLIENT_CONFIG_DEFAULTS_H_
#define TRAIND_CLIENT_CONFIG_DEFAULTS_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "client/command_words.h"
#include "connect/config_file.h"

namespace traind {

// INVALID_ARGUMENT "PATH:LINE: ..." for a default whose verb or flag does not exist, or whose
// value a switch cannot take; OK otherwise. Every default is checked, whatever verb runs.
absl::Status CheckConfigDefaults(const CLI::App& app, const std::vector<DefaultFlag>& defaults,
                                 const std::string& path);

// `args` with the defaults of the verb it names (`named`, from ReadCommandWords) inserted after
// the verb's word, each one the command line does not give itself.
std::vector<std::string> WithConfigDefaults(const CLI::App& app, const VerbAt& named,
                                            const std::vector<DefaultFlag>& defaults,
                                            std::vector<std::string> args);

}  // namespace traind

#endif  // TRAIND_CLIENT_CONFIG_DEFAULTS_H_
