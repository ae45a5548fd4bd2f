#include "server/http/rpc_gateway.h"

#include <grpcpp/generic/generic_stub.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "google/protobuf/util/json_util.h"
#include "server/access_control.h"

namespace traind {
namespace {

const google::protobuf::ServiceDescriptor* TrainerDescriptor() {
  static const google::protobuf::ServiceDescriptor* const service =
      trainer::v1::SubmitJobRequest::descriptor()->file()->FindServiceByName("Trainer");
  return service;
}

}  // namespace

std::string RpcGateway::JsonQuote(const std::string& text) {
  std::string out = "\"";
  for (const unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (c < 0x20) {
          char buffer[8];
          snprintf(buffer, sizeof buffer, "\\u%04x", c);
          out += buffer;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out + "\"";
}

RpcGateway::RpcGateway(std::shared_ptr<grpc::Channel> channel, std::string local_session_secret)
    : channel_(channel),
      stub_(trainer::v1::Trainer::NewStub(channel)),
      generic_(channel),
      local_session_secret_(std::move(local_session_secret)) {}

std::unique_ptr<grpc::ClientContext> RpcGateway::ContextFor(const HttpIdentity& who) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (who.local) {
    context->AddMetadata(AccessControl::kLocalSessionHeader, local_session_secret_);
  } else {
    context->AddMetadata("authorization", absl::StrCat("Bearer ", who.bearer_token));
  }
  return context;
}

int RpcGateway::HttpStatusOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return 200;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return 400;
    case grpc::StatusCode::UNAUTHENTICATED:
      return 401;
    case grpc::StatusCode::PERMISSION_DENIED:
      return 403;
    case grpc::StatusCode::NOT_FOUND:
      return 404;
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::ABORTED:
      return 409;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return 429;
    case grpc::StatusCode::CANCELLED:
      return 499;
    case grpc::StatusCode::UNIMPLEMENTED:
      return 501;
    case grpc::StatusCode::UNAVAILABLE:
      return 503;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return 504;
    default:
      return 500;
  }
}

std::string RpcGateway::ErrorJson(const grpc::Status& status) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const int code = static_cast<int>(status.error_code());
  const char* name = code >= 0 && code <= 16 ? kNames[code] : "UNKNOWN";
  return absl::StrCat("{\"code\":\"", name, "\",\"message\":", JsonQuote(status.error_message()),
                      "}");
}

std::string RpcGateway::ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) {
    return ErrorJson(grpc::Status(grpc::StatusCode::INTERNAL, "cannot write the reply as JSON"));
  }
  return json;
}

JsonReply RpcGateway::CallJson(const HttpIdentity& who, const std::string& method,
                               const std::string& json_request) {
  const google::protobuf::MethodDescriptor* descriptor =
      TrainerDescriptor()->FindMethodByName(method);
  if (descriptor == nullptr || descriptor->client_streaming() || descriptor->server_streaming()) {
    return {404, ErrorJson(grpc::Status(
                     grpc::StatusCode::NOT_FOUND,
                     absl::StrCat("/api/v1/", method.substr(0, 64),
                                  ": no such call (POST /api/v1/METHOD takes the unary methods "
                                  "of trainer.v1.Trainer; watch and download have GET routes)")))};
  }
  const google::protobuf::Message* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor->input_type());
  std::unique_ptr<google::protobuf::Message> request(prototype->New());
  google::protobuf::util::JsonParseOptions parse;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      json_request.empty() ? "{}" : json_request, request.get(), parse);
  if (!parsed.ok()) {
    return {400,
            ErrorJson(grpc::Status(
                grpc::StatusCode::INVALID_ARGUMENT,
                absl::StrCat("body: not a ", descriptor->input_type()->full_name(),
                             " in protobuf's JSON mapping: ", std::string(parsed.message()))))};
  }
  grpc::ByteBuffer request_bytes;
  bool own = false;
  if (!grpc::SerializationTraits<google::protobuf::Message>::Serialize(*request, &request_bytes,
                                                                       &own)
           .ok()) {
    return {500, ErrorJson(grpc::Status(grpc::StatusCode::INTERNAL, "cannot encode the request"))};
  }
  std::unique_ptr<grpc::ClientContext> context = ContextFor(who);
  grpc::ByteBuffer reply_bytes;
  grpc::Status status;
  absl::Notification done;
  generic_.UnaryCall(
      context.get(), absl::StrCat("/", TrainerDescriptor()->full_name(), "/", method),
      grpc::StubOptions(), &request_bytes, &reply_bytes, [&status, &done](grpc::Status result) {
        status = std::move(result);
        done.Notify();
      });
  done.WaitForNotification();
  if (!status.ok()) return {HttpStatusOf(status.error_code()), ErrorJson(status)};
  std::unique_ptr<google::protobuf::Message> reply(
      google::protobuf::MessageFactory::generated_factory()
          ->GetPrototype(descriptor->output_type())
          ->New());
  if (!grpc::SerializationTraits<google::protobuf::Message>::Deserialize(&reply_bytes, reply.get())
           .ok()) {
    return {500, ErrorJson(grpc::Status(grpc::StatusCode::INTERNAL, "cannot decode the reply"))};
  }
  return {200, ToJson(*reply)};
}

}  // namespace traind
