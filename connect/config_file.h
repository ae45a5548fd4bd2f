// trainctl's config file: named contexts (where a traind is and how to reach it safely), in TOML.
//
//   current-context = "lab"
//   [contexts.lab]
//   addr = "gpu-box:50051"
//   tls-ca = "/home/me/certs/ca.pem"
//   token-file = "/home/me/certs/token"
//   [defaults.submit]           # flags every `trainctl submit` gets unless it gives them itself
//   device = "cpu"
//   epochs = 3
//
// Path: $TRAINCTL_CONFIG, else $XDG_CONFIG_HOME/trainctl/config.toml, else
// ~/.config/trainctl/config.toml. Saved atomically, mode 0600 (it names secrets' locations).
#ifndef TRAIND_CONNECT_CONFIG_FILE_H_
#define TRAIND_CONNECT_CONFIG_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "connect/toml_value.h"

namespace traind {

struct ContextEntry {
  std::string name;
  std::string addr;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string token_file;
};

// One default flag: [defaults.VERB] FLAG = VALUE (a string, number or boolean; a list is its
// items joined by commas, as a flag that takes a list reads them).
struct DefaultFlag {
  std::string verb;   // "submit"
  std::string flag;   // "device" (the option --device)
  std::string value;  // as text: "cpu", "3", "true", "1e-3,1e-2"
  using Kind = TomlKind;
  Kind kind = Kind::kString;
  int line = 0;  // in the file, for messages
};

struct ClientConfig {
  std::string current_context;
  std::vector<ContextEntry> contexts;  // sorted by name
  std::vector<DefaultFlag> defaults;   // by verb, then by flag (TOML tables are unordered)

  const ContextEntry* Find(const std::string& name) const;
};

std::string DefaultConfigPath();

// A missing file is an empty config; a malformed one is INVALID_ARGUMENT naming the line.
absl::StatusOr<ClientConfig> LoadClientConfig(const std::string& path);
absl::Status SaveClientConfig(const std::string& path, const ClientConfig& config);

}  // namespace traind

#endif  // TRAIND_CONNECT_CONFIG_FILE_H_
