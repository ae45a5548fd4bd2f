// Unary RPCs that take their request as bytes, so that CheckVarintWidths (common/wire_check.h)
// sees them before protobuf's parser does: the parser cuts an int32 sent as a wider varint to its
// low 32 bits without a word (a batch_size of 2^40 + 5 becomes 5), and nothing that looks at
// the parsed message can tell.
//
// gRPC's generated code marks a method "raw" with Trainer::WithRawCallbackMethod_X<Base>: its
// handler then gets the request's grpc::ByteBuffer and fills the reply's. CheckedCall holds one
// such call's request and reply as messages between the two. It is for the RPCs whose requests
// have 32-bit integer, enum or bool fields: SubmitJob, SubmitSweep, ListJobs, ListJobEvents,
// SetQueueState, SetJobPriority and DeleteJob of trainer.v1.Trainer.
//
// A CheckedCall belongs to the call's work (a shared_ptr the work closure holds) and is used by
// one thread at a time: the reaction that parses, then the executor thread that fills and seals
// the reply, before the reactor's Finish. gRPC owns the reply ByteBuffer, alive until the call
// is done.
#ifndef TRAIND_SERVER_CHECKED_REQUEST_H_
#define TRAIND_SERVER_CHECKED_REQUEST_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include <utility>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace traind {

// Parses `bytes` into `message` after CheckVarintWidths for its type: INVALID_ARGUMENT naming
// the field whose value arrived wider than its type, or the type when the bytes are no message
// of it at all.
absl::Status ParseCheckedRequest(const grpc::ByteBuffer& bytes, google::protobuf::Message* message);

// `message` serialized into `bytes`, the reply of a raw call; INTERNAL when it cannot be.
absl::Status SerializeReply(const google::protobuf::Message& message, grpc::ByteBuffer* bytes);

// The call's default reactor, finished with `status` (converted by ToGrpcStatus): for a request
// refused before any work, like one ParseCheckedRequest refused.
grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    const absl::Status& status);

// One raw unary call's request and reply as messages.
template <typename Request, typename Reply>
class CheckedCall {
 public:
  // `reply_bytes`: the handler's reply ByteBuffer (gRPC's; not owned).
  explicit CheckedCall(grpc::ByteBuffer* reply_bytes) : reply_bytes_(reply_bytes) {}

  CheckedCall(const CheckedCall&) = delete;
  CheckedCall& operator=(const CheckedCall&) = delete;

  // ParseCheckedRequest into request().
  absl::Status Parse(const grpc::ByteBuffer& request_bytes) {
    return ParseCheckedRequest(request_bytes, &request_);
  }

  const Request* request() const { return &request_; }
  Reply* reply() { return &reply_; }

  // What the work returned, after serializing the reply into gRPC's buffer when that is OK (an
  // error sends no reply). Call once, before the reactor's Finish.
  absl::Status Seal(absl::Status status) {
    if (!status.ok()) return status;
    return SerializeReply(reply_, reply_bytes_);
  }

 private:
  Request request_;
  Reply reply_;
  grpc::ByteBuffer* const reply_bytes_;
};

}  // namespace traind

#endif  // TRAIND_SERVER_CHECKED_REQUEST_H_
