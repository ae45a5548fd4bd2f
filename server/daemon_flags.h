// traind's flag table (what --help, the config file, --print-config and the man page all read)
// and the checks that turn the flags that need them into DaemonOptions.
#ifndef TRAIND_SERVER_DAEMON_FLAGS_H_
#define TRAIND_SERVER_DAEMON_FLAGS_H_

#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "hosts/peer_config.h"
#include "server/daemon.h"

namespace traind {

// What some flags give before they are checked and turned into DaemonOptions (the Apply*Flags
// functions below).
struct RawFlags {
  double cancel_grace_seconds = 10;
  std::string host_name;
  std::vector<std::string> python_flags;
  std::vector<std::string> peer_flags;
  ConnectionOptions peer_connection;
  double host_wait_minutes = 10;
  std::vector<std::string> slots;
  std::string script_sandbox = "auto";
  std::string mps = "auto";
  // How to read the configuration, or what to print instead of starting.
  std::string config_path;  // --config; "" for DefaultDaemonConfigPath(), read where it exists
  bool print_config = false;
  bool man_page = false;
};

// Declares every flag of traind on `app`, each bound to `options` or `raw`.
void DeclareFlags(CLI::App& app, DaemonOptions& options, RawFlags& raw);

// What traind does for a flag left unset, where that is more than nothing: {"listen",
// "unix:<state-dir>/traind.sock"}. --print-config says it beside the unset key.
const std::map<std::string, std::string>& UnsetFlagMeanings();

// The flags in `raw` checked into `options`: false (and why on stderr) for a bad one.
bool ApplyRawFlags(const RawFlags& raw, DaemonOptions* options);

}  // namespace traind

#endif  // TRAIND_SERVER_DAEMON_FLAGS_H_
