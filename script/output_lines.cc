#include "script/output_lines.h"

#include <cstdint>

#include "common/terminal_text.h"

namespace traind {

namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

std::string ValidUtf8(absl::string_view text) {
  std::string valid;
  valid.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
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
  for (const char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // "\r\n": the '\r' already ended the line
    }
    if (c == '\n' || c == '\r') {
      Emit(lines);
      after_cr_ = c == '\r';
      continue;
    }
    partial_ += c;
    if (partial_.size() == kMaxLineBytes) Emit(lines);
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
