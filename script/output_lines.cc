#include "script/output_lines.h"

#include <cstdint>

namespace traind {

namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at `text[i]`, or 0 when it is not one.
size_t SequenceLength(absl::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length;
  uint32_t min;
  uint32_t code;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, min = 0x80, code = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, min = 0x800, code = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, min = 0x10000, code = lead & 0x07;
  } else {
    return 0;  // a continuation byte, or 0xF8-0xFF
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

}  // namespace

std::string ValidUtf8(absl::string_view text) {
  std::string valid;
  valid.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t length = SequenceLength(text, i);
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
