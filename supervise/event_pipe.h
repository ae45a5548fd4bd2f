// Writes length-delimited protobuf messages to a file descriptor (a worker's, or traind-slurm's,
// end of the pipe to traind): Write flushes each one so the daemon sees events as they happen;
// Buffer and Flush send several at once. Not thread-safe.
#ifndef TRAIND_SUPERVISE_EVENT_PIPE_H_
#define TRAIND_SUPERVISE_EVENT_PIPE_H_

#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "google/protobuf/message_lite.h"

namespace traind {

class EventPipeWriter {
 public:
  explicit EventPipeWriter(int fd) : stream_(fd) {}
  // False once the daemon's end is gone.
  bool Write(const google::protobuf::MessageLite& message);
  // Adds `message` to what the next Flush() sends (or earlier, when the stream's 8 KiB buffer
  // fills): messages sent together mostly arrive together, and the daemon stores what arrives
  // together in one transaction. False once the daemon's end is gone.
  bool Buffer(const google::protobuf::MessageLite& message);
  bool Flush() { return stream_.Flush(); }
  // Ends the stream (the daemon reads its end) before the process ends.
  void Close() { stream_.Close(); }

 private:
  google::protobuf::io::FileOutputStream stream_;
};

}  // namespace traind

#endif  // TRAIND_SUPERVISE_EVENT_PIPE_H_
