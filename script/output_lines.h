// OutputLines: a program's output bytes, as they arrive from a pipe, cut into lines fit to store
// and to send as events. A line ends at '\n' or at a lone '\r' (a tqdm bar redraws itself with
// '\r': each redraw is a line); "\r\n" ends one line. A line longer than kMaxLineBytes is cut
// there (a program that prints a megabyte without a newline still streams). Every line is made
// valid UTF-8 (protobuf strings must be; a program may print anything): a byte that is not part
// of a valid sequence becomes U+FFFD. Terminal escapes are kept: the clients show them harmless
// (common/terminal_text.h). Not thread-safe: one per stream.
#ifndef TRAIND_SCRIPT_OUTPUT_LINES_H_
#define TRAIND_SCRIPT_OUTPUT_LINES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace traind {

// `text` with every byte that is not part of a valid UTF-8 sequence (overlong forms, surrogates
// and code points above U+10FFFF included) replaced by U+FFFD.
std::string ValidUtf8(absl::string_view text);

class OutputLines {
 public:
  static constexpr size_t kMaxLineBytes = 16 * 1024;

  // Appends the lines `bytes` completes to `lines`.
  void Append(absl::string_view bytes, std::vector<std::string>* lines);
  // At the end of the stream: the last line if it had no newline.
  void Finish(std::vector<std::string>* lines);

 private:
  void Emit(std::vector<std::string>* lines);
  std::string partial_;
  bool after_cr_ = false;  // the last byte was '\r': a '\n' next belongs to that line's end
};

}  // namespace traind

#endif  // TRAIND_SCRIPT_OUTPUT_LINES_H_
