#include "common/terminal_text.h"

#include <cstdint>

#include "absl/strings/str_format.h"

namespace traind {

namespace {

bool IsBidiControl(uint32_t c) {
  return (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

}  // namespace

size_t DecodeUtf8(absl::string_view text, size_t i, uint32_t* code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length;
  uint32_t value;
  uint32_t minimum;
  if (lead < 0x80) {
    *code_point = lead;
    return 1;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, value = lead & 0x1F, minimum = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, value = lead & 0x0F, minimum = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, value = lead & 0x07, minimum = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    value = (value << 6) | (byte(i + k) & 0x3F);
  }
  if (value < minimum || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 0;
  *code_point = value;
  return length;
}

std::string TerminalSafe(absl::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t c = 0;
    const size_t length = DecodeUtf8(text, i, &c);
    if (length == 0) {
      absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (c < 0x20 || c == 0x7F) {
      if (keep_newlines && (c == '\n' || c == '\t')) {
        out += static_cast<char>(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else {
        absl::StrAppendFormat(&out, "\\x%02x", c);
      }
    } else if ((c >= 0x80 && c <= 0x9F) || IsBidiControl(c)) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out.append(text.data() + i, length);
    }
    i += length;
  }
  return out;
}

}  // namespace traind
