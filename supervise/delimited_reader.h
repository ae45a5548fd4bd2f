// Splits a byte stream of length-delimited protobuf messages (varint size, then the message) as it
// arrives in arbitrary chunks from a worker's pipe. Bytes are untrusted: a malformed or oversized
// frame is an error, never a crash. Not thread-safe.
#ifndef TRAIND_SUPERVISE_DELIMITED_READER_H_
#define TRAIND_SUPERVISE_DELIMITED_READER_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message_lite.h"

namespace traind {

class DelimitedReader {
 public:
  static constexpr size_t kMaxMessageBytes = 4 << 20;

  void Append(const char* data, size_t size) { buffer_.append(data, size); }

  // OK and true: `message` holds the next message. OK and false: need more bytes.
  // DATA_LOSS: the stream is corrupt; stop reading it.
  absl::Status Next(google::protobuf::MessageLite* message, bool* got_one);

  // Bytes received but not yet consumed (a partial frame at EOF means the sender died mid-write).
  size_t pending_bytes() const { return buffer_.size() - offset_; }

 private:
  std::string buffer_;
  size_t offset_ = 0;
};

}  // namespace traind

#endif  // TRAIND_SUPERVISE_DELIMITED_READER_H_
