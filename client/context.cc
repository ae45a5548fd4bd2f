#include "client/context.h"

#include "client/exit_codes.h"
#include "common/paths.h"
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

int Context::Fail(const grpc::Status& status) {
  err_ << "trainctl: " << status.error_message() << "\n";
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      err_ << "trainctl: cannot reach traind at " << resolved_.addr
           << (resolved_.tls ? " over TLS (is --tls-ca the CA that signed traind's certificate?)"
                             : "")
           << ". Start it with `traind &` (or `build/bin/traind --state-dir DIR`), or point "
              "--addr / TRAINCTL_ADDR / --context at a running one.\n";
      return kExitUnreachable;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      err_ << "trainctl: traind at " << resolved_.addr
           << " refused the credentials (UNAUTHENTICATED); pass --token-file or "
              "TRAINCTL_TOKEN_FILE, or use a context that has one\n";
      return kExitUnreachable;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::ALREADY_EXISTS:
      return kExitUsage;
    default:
      return kExitJobFailed;
  }
}

int Context::UsageError(const std::string& message) {
  err_ << "trainctl: " << message << "\n";
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
