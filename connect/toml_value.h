// One TOML value as the text a command-line flag would take: shared by trainctl's [defaults.VERB]
// tables (connect/config_file.h) and traind's config file (server/daemon_config.h), so both read
// `epochs = 3`, `lr = 1e-3`, `watch = true` and `data-root = ["/a", "/b"]` alike.
#ifndef TRAIND_CONNECT_TOML_VALUE_H_
#define TRAIND_CONNECT_TOML_VALUE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "connect/toml_kind.h"
#include "toml++/toml.h"

namespace traind {

struct TomlText {
  TomlKind kind = TomlKind::kString;
  // One item, or an array's items (each a string or a number; never nested).
  std::vector<std::string> items;
};

// "a string, number, boolean or list" (INVALID_ARGUMENT, without a location: the caller knows the
// key and line) for a table, a date or a nested list.
absl::StatusOr<TomlText> ValueAsText(const toml::node& value);

}  // namespace traind

#endif  // TRAIND_CONNECT_TOML_VALUE_H_
