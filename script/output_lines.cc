#include "script/output_lines.h"

#include <algorithm>
#include <cstdint>

#include "common/terminal_text.h"

namespace traind {

namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

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

void OutputLines::Append(absl::string_view bytes, std::vector<std::string>* lines) {
  // A piece at a time up to the next line end (a program printing 100,000 lines a second makes
  // this the runner's busiest loop: no byte-by-byte appends).
  while (!bytes.empty()) {
    if (after_cr_) {
      after_cr_ = false;
      if (bytes.front() == '\n') {  // "\r\n": the '\r' already ended the line
        bytes.remove_prefix(1);
        continue;
      }
    }
    const size_t room = kMaxLineBytes - partial_.size();
    const size_t end = std::min(bytes.find_first_of("\r\n"), bytes.size());
    if (end >= room) {  // the line is full before it ends: cut it there
      partial_.append(bytes.data(), room);
      bytes.remove_prefix(room);
      Emit(lines);
      continue;
    }
    partial_.append(bytes.data(), end);
    if (end == bytes.size()) break;
    after_cr_ = bytes[end] == '\r';
    bytes.remove_prefix(end + 1);
    Emit(lines);
  }
}

void OutputLines::Finish(std::vector<std::string>* lines) {
  if (!partial_.empty()) Emit(lines);
}

void OutputLines::Emit(std::vector<std::string>* lines) {
  lines->push_back(ValidUtf8(partial_));
  partial_.clear();
}

}  // namespace traind
