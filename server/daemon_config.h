// traind's config file: every long flag of `traind --help` as KEY = VALUE in TOML, the flag's name
// without its dashes; the command line overrides the file, the file overrides traind's defaults.
//
//   state-dir = "/var/lib/traind"
//   http = "127.0.0.1:8471"
//   data-root = ["/srv/datasets", "/home/shared/data"]   # a flag given several times: a list
//   max-queued-per-token = 200
//   insecure-loopback = true                              # a switch: true or false
//
// Path: --config PATH, else $TRAIND_CONFIG, else $XDG_CONFIG_HOME/traind/traind.toml (default
// ~/.config/traind/traind.toml), read only where it exists. The packaged system service runs
// `traind --config /etc/traind/traind.toml`. A mistake refuses the start with the file, line and
// key: nothing starts half-configured.
#ifndef TRAIND_SERVER_DAEMON_CONFIG_H_
#define TRAIND_SERVER_DAEMON_CONFIG_H_

#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "connect/toml_kind.h"

namespace traind {

struct ConfigEntry {
  std::string key;                    // "state-dir"
  std::vector<std::string> items;     // its value as flag text: one item, or a list's items
  TomlKind kind = TomlKind::kString;  // kArray: a list
  int line = 0;
};

struct DaemonConfig {
  std::string path;          // the file read; "" when there was none
  std::string none_because;  // where there was none: "~/.config/traind/traind.toml does not exist"
  std::vector<ConfigEntry> entries;  // in the file's order
};

std::string DefaultDaemonConfigPath();

// The file at `path`. Where it does not exist, an empty config if `must_exist` is false (the
// default path), an error otherwise (--config). INVALID_ARGUMENT naming the file (and line) for
// a file that cannot be read, that others than its owner may write (its settings name programs
// traind runs), or that is not TOML of top-level KEY = VALUE (a duplicate key included).
absl::StatusOr<DaemonConfig> ReadDaemonConfig(const std::string& path, bool must_exist);

// One option's value at start and where it came from, for --print-config.
struct SettingSource {
  const CLI::Option* option = nullptr;
  std::vector<std::string> items;  // empty: not set
  std::string source;              // "command line", "PATH:LINE" or "default"
};

// After `app` parsed the command line: gives every option the command line left out its value
// from `config`, checked by the option's own validators. INVALID_ARGUMENT "PATH:LINE: KEY: ..."
// for an unknown key (with the nearest one), a value of the wrong kind or out of range, or a key
// that only the command line takes (config, print-config, help, version). On success, every
// option's value and source, in --help's order.
absl::StatusOr<std::vector<SettingSource>> ApplyDaemonConfig(CLI::App& app,
                                                             const DaemonConfig& config);

// --print-config: the settings as a config file would give them, each with its source; an unset
// key with what traind does then, where `unset_meanings` says (daemon_flags.h).
std::string RenderSettings(const std::vector<SettingSource>& settings, const DaemonConfig& config,
                           const std::map<std::string, std::string>& unset_meanings = {});

}  // namespace traind

#endif  // TRAIND_SERVER_DAEMON_CONFIG_H_
