#include "script/output_lines.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/terminal_text.h"

namespace traind {

namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Whether `text` is valid UTF-8 as it is: ASCII (most output) at a compare a byte, the rest
// decoded.
bool IsValidUtf8(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    uint32_t code_point;
    const size_t length = DecodeUtf8(text, i, &code_point);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

}  // namespace

std::string ValidUtf8(absl::string_view text) {
  // Most output is ASCII: one pass to find the first byte that is not, and copy the rest as is.
  size_t i = 0;
  while (i < text.size() && static_cast<unsigned char>(text[i]) < 0x80) ++i;
  std::string valid(text.substr(0, i));
  if (i == text.size()) return valid;
  valid.reserve(text.size());
  while (i < text.size()) {
    uint32_t code_point;
    const size_t length = DecodeUtf8(text, i, &code_point);
    if (length == 0) {
      valid += kReplacement;
      ++i;
    } else {
      valid.append(text.data() + i, length);
      i += length;
    }
  }
  return valid;
}

void OutputLines::Append(absl::string_view bytes, LineFunction line) {
  // A piece at a time up to the next line end (a program printing 100,000 lines a second makes
  // this the runner's busiest loop: no byte-by-byte appends). Line ends are found with memchr
  // (absl's find_first_of builds a table of its set each call: a fifth of the runner's time);
  // the next '\n' is found once and looked for again only after it is passed, so that lines
  // ended by '\r' alone (a progress bar) do not each scan the rest of the piece.
  const char* newline = nullptr;  // the next '\n', or the end of `bytes`; null: not looked for
  while (!bytes.empty()) {
    if (after_cr_) {
      after_cr_ = false;
      if (bytes.front() == '\n') {  // "\r\n": the '\r' already ended the line
        bytes.remove_prefix(1);
        continue;
      }
    }
    const size_t room = kMaxLineBytes - partial_.size();
    if (newline == nullptr || newline < bytes.data()) {
      const void* found = std::memchr(bytes.data(), '\n', bytes.size());
      newline = found != nullptr ? static_cast<const char*>(found) : bytes.data() + bytes.size();
    }
    const size_t before_newline = static_cast<size_t>(newline - bytes.data());
    const void* carriage_return = std::memchr(bytes.data(), '\r', before_newline);
    const size_t end =
        carriage_return != nullptr
            ? static_cast<size_t>(static_cast<const char*>(carriage_return) - bytes.data())
            : before_newline;
    if (end >= room) {  // the line is full before it ends: cut it there
      Emit(bytes.substr(0, room), line);
      bytes.remove_prefix(room);
      continue;
    }
    if (end == bytes.size()) {  // the line goes on in the next piece
      partial_.append(bytes.data(), end);
      break;
    }
    after_cr_ = bytes[end] == '\r';
    Emit(bytes.substr(0, end), line);
    bytes.remove_prefix(end + 1);
  }
}

void OutputLines::Finish(LineFunction line) {
  if (!partial_.empty()) Emit("", line);
}

void OutputLines::Emit(absl::string_view rest, LineFunction line) {
  absl::string_view whole = rest;
  if (!partial_.empty()) {
    partial_.append(rest.data(), rest.size());
    whole = partial_;
  }
  if (IsValidUtf8(whole)) {
    line(whole);
  } else {
    valid_ = ValidUtf8(whole);
    line(valid_);
  }
  partial_.clear();
}

}  // namespace traind
