#include "supervise/delimited_reader.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace traind {

absl::Status DelimitedReader::Next(google::protobuf::MessageLite* message, bool* got_one) {
  *got_one = false;
  uint64_t size = 0;
  size_t pos = offset_;
  for (int shift = 0;; shift += 7) {
    if (pos >= buffer_.size()) return absl::OkStatus();  // the varint is incomplete
    if (shift > 35) return absl::DataLossError("event stream: malformed length prefix");
    const uint8_t byte = static_cast<uint8_t>(buffer_[pos++]);
    size |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
  }
  if (size > kMaxMessageBytes) {
    return absl::DataLossError(
        absl::StrCat("event stream: message of ", size, " bytes is too large"));
  }
  if (buffer_.size() - pos < size) return absl::OkStatus();
  if (!message->ParseFromArray(buffer_.data() + pos, static_cast<int>(size))) {
    return absl::DataLossError("event stream: undecodable message");
  }
  offset_ = pos + size;
  if (offset_ > (1 << 16) && offset_ * 2 > buffer_.size()) {  // compact now and then
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  *got_one = true;
  return absl::OkStatus();
}

}  // namespace traind
