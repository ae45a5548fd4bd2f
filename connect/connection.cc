#include "connect/connection.h"

#include <grpcpp/support/client_interceptor.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/loopback.h"
#include "common/paths.h"
#include "common/status_macros.h"
#include "connect/config_file.h"

namespace traind {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& option, const std::string& path) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok())
    return absl::InvalidArgumentError(absl::StrCat(option, ": ", text.status().message()));
  return text;
}

// Adds `authorization: Bearer <token>` to every call. An interceptor rather than call
// credentials: gRPC refuses call credentials on plaintext channels, and loopback may be one.
class BearerTokenInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit BearerTokenInterceptor(const std::string* header) : header_(header) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", *header_});
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;
};

class BearerTokenInterceptorFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerTokenInterceptorFactory(const std::string& token)
      : header_(absl::StrCat("Bearer ", token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new BearerTokenInterceptor(&header_);
  }

 private:
  const std::string header_;  // outlives the channel: the factories are owned by it
};

}  // namespace

absl::StatusOr<ResolvedConnection> ResolveConnection(const ConnectionOptions& options,
                                                     const std::string& config_path) {
  ConnectionOptions merged = options;
  ResolvedConnection resolved;
  ASSIGN_OR_RETURN(ClientConfig config, LoadClientConfig(config_path));
  // An explicit --context fills whatever the flags left unset; the current context applies only
  // when no address was given at all, so `--addr X` never picks up another daemon's credentials.
  const std::string context = !options.context.empty() ? options.context
                              : options.addr.empty()   ? config.current_context
                                                       : "";
  if (!context.empty()) {
    const ContextEntry* entry = config.Find(context);
    if (entry == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("context: no context named '", context,
                                                     "' in ", config_path,
                                                     " (`trainctl context list` shows them)"));
    }
    // Flags and variables win over the context, field by field.
    if (merged.addr.empty()) merged.addr = entry->addr;
    if (merged.tls_ca.empty()) merged.tls_ca = entry->tls_ca;
    if (merged.tls_cert.empty()) merged.tls_cert = entry->tls_cert;
    if (merged.tls_key.empty()) merged.tls_key = entry->tls_key;
    if (merged.token_file.empty()) merged.token_file = entry->token_file;
    resolved.context = context;
  }
  resolved.addr = merged.addr.empty() ? DefaultAddress(DefaultStateDir()) : merged.addr;
  const bool unix_socket =
      absl::StartsWith(resolved.addr, "unix:") || absl::StartsWith(resolved.addr, "/");
  if (merged.tls_cert.empty() != merged.tls_key.empty()) {
    return absl::InvalidArgumentError("tls-cert, tls-key: give both or neither");
  }
  const bool tls_material = !merged.tls_ca.empty() || !merged.tls_cert.empty();
  if (merged.plaintext && tls_material) {
    return absl::InvalidArgumentError("plaintext: cannot be combined with --tls-ca/--tls-cert");
  }
  // TCP is TLS unless asked otherwise; loopback without TLS material defaults to plaintext,
  // which is the only place traind serves it.
  resolved.tls =
      !unix_socket && !merged.plaintext && (tls_material || !IsLoopbackAddress(resolved.addr));
  if (!merged.tls_ca.empty()) {
    ASSIGN_OR_RETURN(resolved.root_certs, ReadFile("tls-ca", merged.tls_ca));
  }
  if (!merged.tls_cert.empty()) {
    ASSIGN_OR_RETURN(resolved.client_cert, ReadFile("tls-cert", merged.tls_cert));
    ASSIGN_OR_RETURN(resolved.client_key, ReadFile("tls-key", merged.tls_key));
  }
  if (!merged.token_file.empty()) {
    ASSIGN_OR_RETURN(std::string token, ReadFile("token-file", merged.token_file));
    resolved.token = std::string(absl::StripAsciiWhitespace(token));
    if (resolved.token.empty() || resolved.token.find_first_of(" \t\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("token-file: '", merged.token_file, "' must hold one token on one line"));
    }
  }
  return resolved;
}

std::shared_ptr<grpc::Channel> OpenChannel(const ResolvedConnection& connection,
                                           grpc::ChannelArguments args) {
  args.SetMaxReceiveMessageSize(64 << 20);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (connection.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = connection.root_certs;
    ssl.pem_cert_chain = connection.client_cert;
    ssl.pem_private_key = connection.client_key;
    credentials = grpc::SslCredentials(ssl);
  }
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  if (!connection.token.empty()) {
    interceptors.push_back(std::make_unique<BearerTokenInterceptorFactory>(connection.token));
  }
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      ToGrpcTarget(connection.addr), credentials, args, std::move(interceptors));
}

}  // namespace traind
