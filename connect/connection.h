// How trainctl reaches traind: address, TLS material and bearer token, from (first wins) the
// flags, the TRAINCTL_* variables, the chosen context (--context / TRAINCTL_CONTEXT, or the config
// file's current-context when no address was given), and last the local Unix socket.
#ifndef TRAIND_CONNECT_CONNECTION_H_
#define TRAIND_CONNECT_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace traind {

struct ConnectionOptions {
  std::string addr;      // unix:PATH or HOST:PORT
  std::string tls_ca;    // CA (PEM) that signed traind's certificate
  std::string tls_cert;  // client certificate (PEM), when traind asks for one
  std::string tls_key;
  std::string token_file;  // one line: the bearer token
  bool plaintext = false;  // TCP without TLS (traind allows it on loopback only)
  std::string context;     // name in the config file
};

// What a channel needs, read and checked.
struct ResolvedConnection {
  std::string addr;
  std::string context;  // the context used, if any
  bool tls = false;
  std::string root_certs;  // empty with tls: the system's roots
  std::string client_cert;
  std::string client_key;
  std::string token;
};

// Fills what the flags and variables left unset from the context, then reads the files.
// INVALID_ARGUMENT naming the option for an unknown context or an unreadable file.
absl::StatusOr<ResolvedConnection> ResolveConnection(const ConnectionOptions& options,
                                                     const std::string& config_path);

// `args`: the caller's own channel arguments (keepalive, ...); the message size is set here.
std::shared_ptr<grpc::Channel> OpenChannel(const ResolvedConnection& connection,
                                           grpc::ChannelArguments args = grpc::ChannelArguments());

}  // namespace traind

#endif  // TRAIND_CONNECT_CONNECTION_H_
