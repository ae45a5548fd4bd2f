#include "server/checked_request.h"

#include <grpcpp/impl/codegen/proto_utils.h>

#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "common/wire_check.h"

namespace traind {

absl::Status ParseCheckedRequest(const grpc::ByteBuffer& bytes,
                                 google::protobuf::Message* message) {
  const std::string& type = message->GetDescriptor()->full_name();
  // One slice (the usual case for a small request) is read in place; several are joined.
  grpc::Slice single;
  std::string joined;
  absl::string_view wire;
  if (!bytes.Valid()) {
    wire = absl::string_view();  // an empty request
  } else if (bytes.TrySingleSlice(&single).ok()) {
    wire = absl::string_view(reinterpret_cast<const char*>(single.begin()), single.size());
  } else {
    std::vector<grpc::Slice> slices;
    if (!bytes.Dump(&slices).ok()) {
      return absl::InvalidArgumentError(absl::StrCat("not a valid ", type, ": unreadable bytes"));
    }
    joined.reserve(bytes.Length());
    for (const grpc::Slice& slice : slices) {
      joined.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
    wire = joined;
  }
  if (wire.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(absl::StrCat("not a valid ", type, ": over 2 GiB"));
  }
  RETURN_IF_ERROR(CheckVarintWidths(*message->GetDescriptor(), wire));
  if (!message->ParseFromArray(wire.data(), static_cast<int>(wire.size()))) {
    return absl::InvalidArgumentError(absl::StrCat("not a valid ", type));
  }
  return absl::OkStatus();
}

absl::Status SerializeReply(const google::protobuf::Message& message, grpc::ByteBuffer* bytes) {
  bool own_buffer = false;
  const grpc::Status status =
      grpc::SerializationTraits<google::protobuf::Message>::Serialize(message, bytes, &own_buffer);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("cannot encode the reply (",
                                            message.GetDescriptor()->full_name(),
                                            "): ", status.error_message()));
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace traind
