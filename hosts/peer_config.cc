#include "hosts/peer_config.h"

#include <unistd.h>

#include <cstdlib>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/job_spec.h"
#include "common/status_macros.h"

namespace traind {

namespace {

constexpr char kContextPrefix[] = "context:";

std::string Env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  return value == nullptr ? "" : value;
}

}  // namespace

std::string ThisHostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  const std::string full = name;
  return full.substr(0, full.find('.'));
}

absl::StatusOr<PeerConfig> ParsePeerFlag(const std::string& flag, const ConnectionOptions& shared) {
  const size_t eq = flag.find('=');
  if (eq == std::string::npos || eq + 1 == flag.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer: NAME=HOST:PORT or NAME=context:CONTEXT, got '", flag, "'"));
  }
  PeerConfig peer;
  peer.name = flag.substr(0, eq);
  RETURN_IF_ERROR(ValidateHostName("peer", peer.name));
  const std::string target = flag.substr(eq + 1);
  if (absl::StartsWith(target, kContextPrefix)) {
    // The context names address, TLS files and token; the shared options fill what it lacks.
    peer.connection = shared;
    peer.connection.context = target.substr(sizeof(kContextPrefix) - 1);
    return peer;
  }
  const size_t colon = target.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(target.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer: ", peer.name, ": HOST:PORT or context:CONTEXT, got '", target, "'"));
  }
  peer.connection = shared;
  peer.connection.addr = target;
  return peer;
}

absl::Status CheckPeers(const PeersConfig& config) {
  std::set<std::string> names = {config.self};
  for (const PeerConfig& peer : config.peers) {
    if (!names.insert(peer.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("peer: '", peer.name, "' is named twice (or is this traind's own --name)"));
    }
    absl::StatusOr<ResolvedConnection> resolved =
        ResolveConnection(peer.connection, config.config_path);
    if (!resolved.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("peer ", peer.name, ": ", resolved.status().message()));
    }
    if (resolved->token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("peer ", peer.name,
                       ": no token (--peer-token-file, or the context's token file): "
                       "peers accept admin tokens only"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> PeersEnvironment(const PeersConfig& config) {
  std::vector<std::string> environment = {"TRAIND_HOST_NAME=" + config.self,
                                          "TRAIND_CLIENT_CONFIG=" + config.config_path,
                                          absl::StrCat("TRAIND_PEER_COUNT=", config.peers.size())};
  for (size_t i = 0; i < config.peers.size(); ++i) {
    const PeerConfig& peer = config.peers[i];
    const std::string prefix = absl::StrCat("TRAIND_PEER_", i, "_");
    environment.push_back(prefix + "NAME=" + peer.name);
    environment.push_back(prefix + "ADDR=" + peer.connection.addr);
    environment.push_back(prefix + "CONTEXT=" + peer.connection.context);
    environment.push_back(prefix + "TLS_CA=" + peer.connection.tls_ca);
    environment.push_back(prefix + "TLS_CERT=" + peer.connection.tls_cert);
    environment.push_back(prefix + "TLS_KEY=" + peer.connection.tls_key);
    environment.push_back(prefix + "TOKEN_FILE=" + peer.connection.token_file);
  }
  return environment;
}

absl::StatusOr<PeersConfig> PeersFromEnvironment() {
  PeersConfig config;
  config.self = Env("TRAIND_HOST_NAME");
  config.config_path = Env("TRAIND_CLIENT_CONFIG");
  int count = 0;
  if (config.self.empty() || !absl::SimpleAtoi(Env("TRAIND_PEER_COUNT"), &count) || count < 0) {
    return absl::InvalidArgumentError(
        "TRAIND_HOST_NAME and TRAIND_PEER_COUNT are not set (traind sets them)");
  }
  for (int i = 0; i < count; ++i) {
    const std::string prefix = absl::StrCat("TRAIND_PEER_", i, "_");
    PeerConfig peer;
    peer.name = Env(prefix + "NAME");
    peer.connection.addr = Env(prefix + "ADDR");
    peer.connection.context = Env(prefix + "CONTEXT");
    peer.connection.tls_ca = Env(prefix + "TLS_CA");
    peer.connection.tls_cert = Env(prefix + "TLS_CERT");
    peer.connection.tls_key = Env(prefix + "TLS_KEY");
    peer.connection.token_file = Env(prefix + "TOKEN_FILE");
    config.peers.push_back(std::move(peer));
  }
  return config;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenPeerChannel(const PeersConfig& config,
                                                               const PeerConfig& peer) {
  ASSIGN_OR_RETURN(ResolvedConnection resolved,
                   ResolveConnection(peer.connection, config.config_path));
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 2000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 3000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // A fresh channel per peer call site: its own connection, not one shared with other jobs.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return OpenChannel(resolved, std::move(args));
}

}  // namespace traind
