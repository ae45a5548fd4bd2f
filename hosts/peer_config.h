// The other traind hosts this one may run jobs with (traind --peer), and how a job's launcher
// (traind-hosts) learns them: traind checks them when it starts and hands them on in the
// launcher's environment. A peer is reached like any remote traind, with TLS and a token: the
// address and the shared --peer-tls-* / --peer-token-file options, or a trainctl context (which
// names all of them) in the client config file.
#ifndef TRAIND_HOSTS_PEER_CONFIG_H_
#define TRAIND_HOSTS_PEER_CONFIG_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "connect/connection.h"

namespace traind {

struct PeerConfig {
  std::string name;
  ConnectionOptions connection;  // addr, or context; TLS files and token file
};

struct PeersConfig {
  std::string self;         // this traind's name in --hosts
  std::string config_path;  // trainctl's contexts file, for peers given as context:NAME
  std::vector<PeerConfig> peers;
};

// This machine's host name, up to its first dot: traind's default --name.
std::string ThisHostName();

// One --peer value, "NAME=HOST:PORT" or "NAME=context:CONTEXT", with `shared` (the --peer-tls-*
// and --peer-token-file options) for an address. INVALID_ARGUMENT naming peer otherwise.
absl::StatusOr<PeerConfig> ParsePeerFlag(const std::string& flag, const ConnectionOptions& shared);

// Checks every peer's connection can be made (names distinct and not `self`, contexts exist,
// files readable, a token for each), without calling any.
absl::Status CheckPeers(const PeersConfig& config);

// The launcher's environment ("NAME=value" entries) and back.
std::vector<std::string> PeersEnvironment(const PeersConfig& config);
absl::StatusOr<PeersConfig> PeersFromEnvironment();

// A channel to `peer` (TLS and the token as resolved), with keepalive pings every 2 s that give
// up after 3 s unanswered: a peer whose network is gone is noticed within seconds, not minutes.
absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenPeerChannel(const PeersConfig& config,
                                                               const PeerConfig& peer);

}  // namespace traind

#endif  // TRAIND_HOSTS_PEER_CONFIG_H_
