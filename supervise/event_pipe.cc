#include "supervise/event_pipe.h"

#include "google/protobuf/util/delimited_message_util.h"

namespace traind {

bool EventPipeWriter::Write(const google::protobuf::MessageLite& message) {
  return Buffer(message) && stream_.Flush();
}

bool EventPipeWriter::Buffer(const google::protobuf::MessageLite& message) {
  return google::protobuf::util::SerializeDelimitedToZeroCopyStream(message, &stream_);
}

}  // namespace traind
