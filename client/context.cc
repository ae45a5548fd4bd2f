#include "client/context.h"

#include "client/exit_codes.h"
#include "common/paths.h"
#include "common/terminal_text.h"
#include "google/protobuf/util/json_util.h"

namespace traind {

absl::Status Context::ResolveConnection() {
  absl::StatusOr<ResolvedConnection> resolved =
      traind::ResolveConnection(options_.connection, options_.config_path);
  if (!resolved.ok()) return resolved.status();
  resolved_ = *std::move(resolved);
  return absl::OkStatus();
}

trainer::v1::Trainer::Stub& Context::stub() {
  if (stub_ == nullptr) stub_ = trainer::v1::Trainer::NewStub(OpenChannel(resolved_));
  return *stub_;
}

namespace {

// What an UNAVAILABLE status says went wrong, from gRPC's text (it has no finer codes).
std::string WhyUnavailable(const std::string& message, const ResolvedConnection& connection) {
  auto has = [&](const char* text) { return message.find(text) != std::string::npos; };
  if (has("Permission denied")) {
    return "this user may not open traind's socket (it is 0600: only the user who runs traind "
           "may use it; others connect over TCP with a token, docs/remote.md)";
  }
  if (has("handshake") || has("certificate") || has("SSL") || has("ssl")) {
    return "the TLS handshake failed (is --tls-ca the CA that signed traind's certificate, and "
           "does traind want a client certificate: --tls-cert/--tls-key?)";
  }
  if (has("No such file")) {
    return "no socket there: traind is not running with this state directory. Start it with "
           "`traind &` (or `build/bin/traind --state-dir DIR`), or point --addr / TRAINCTL_ADDR "
           "/ --context at a running one";
  }
  return std::string("nothing answers there") + (connection.tls ? " over TLS" : "") +
         ". Start traind with `traind &` (or `build/bin/traind --state-dir DIR`), or point "
         "--addr / TRAINCTL_ADDR / --context at a running one";
}

}  // namespace

int Context::Fail(const grpc::Status& status) {
  err_ << "trainctl: " << TerminalSafe(status.error_message(), /*keep_newlines=*/true) << "\n";
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      err_ << "trainctl: cannot reach traind at " << resolved_.addr << ": "
           << WhyUnavailable(status.error_message(), resolved_) << ".\n";
      return kExitUnreachable;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      err_ << "trainctl: traind at " << resolved_.addr
           << " did not answer in time; it is reachable but busy or stuck (its log says which)"
              ".\n";
      return kExitUnreachable;
    case grpc::StatusCode::UNAUTHENTICATED:
      err_ << "trainctl: traind at " << resolved_.addr
           << " refused the credentials (UNAUTHENTICATED); pass --token-file or "
              "TRAINCTL_TOKEN_FILE, or use a context that has one\n";
      return kExitUnreachable;
    case grpc::StatusCode::PERMISSION_DENIED:  // the token is good; its role does not allow this
      return kExitUnreachable;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::ALREADY_EXISTS:
      return kExitUsage;
    default:  // FAILED_PRECONDITION (e.g. cancel of a finished job), RESOURCE_EXHAUSTED, ...
      return kExitJobFailed;
  }
}

int Context::UsageError(const std::string& message) {
  err_ << "trainctl: " << TerminalSafe(message) << "\n";
  return kExitUsage;
}

void Context::PrintJson(const google::protobuf::Message& message, bool one_line) {
  google::protobuf::util::JsonPrintOptions print;
  print.add_whitespace = !one_line;
  print.always_print_primitive_fields = true;
  std::string json;
  google::protobuf::util::MessageToJsonString(message, &json, print);
  out_ << json;
  if (one_line || json.empty() || json.back() != '\n') out_ << "\n";
}

}  // namespace traind
