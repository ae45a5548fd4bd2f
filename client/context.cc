#include "client/context.h"

#include "client/exit_codes.h"
#include "common/paths.h"
#include "google/protobuf/util/json_util.h"

namespace traind {

trainer::v1::Trainer::Stub& Context::stub() {
  if (stub_ == nullptr) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    auto channel = grpc::CreateCustomChannel(ToGrpcTarget(options_.addr),
                                             grpc::InsecureChannelCredentials(), args);
    stub_ = trainer::v1::Trainer::NewStub(channel);
  }
  return *stub_;
}

int Context::Fail(const grpc::Status& status) {
  err_ << "trainctl: " << status.error_message() << "\n";
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      err_ << "trainctl: cannot reach traind at " << options_.addr
           << ". Start it with `traind &` (or `build/bin/traind --state-dir DIR`), or point "
              "--addr / TRAINCTL_ADDR at a running one.\n";
      return kExitUnreachable;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
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
