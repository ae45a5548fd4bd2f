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

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace traind {

// `text` with every byte that is not part of a valid UTF-8 sequence (overlong forms, surrogates
// and code points above U+10FFFF included) replaced by U+FFFD.
std::string ValidUtf8(absl::string_view text);

class OutputLines {
 public:
  static constexpr size_t kMaxLineBytes = 16 * 1024;
  // Called with each line; the view lasts until it returns. A line that arrived whole in one
  // piece of valid UTF-8 is a view of the piece itself: no copy (at 100,000 lines a second a
  // string per line was a fifth of the runner's work).
  using LineFunction = absl::FunctionRef<void(absl::string_view line)>;

  // Calls `line` with each line `bytes` completes.
  void Append(absl::string_view bytes, LineFunction line);
  // At the end of the stream: the last line if it had no newline.
  void Finish(LineFunction line);

 private:
  // Calls `line` with what partial_ holds followed by `rest`, made valid UTF-8.
  void Emit(absl::string_view rest, LineFunction line);
  std::string partial_;
  std::string valid_;      // a line that needed U+FFFD, while `line` reads it
  bool after_cr_ = false;  // the last byte was '\r': a '\n' next belongs to that line's end
};

}  // namespace traind

#endif  // TRAIND_SCRIPT_OUTPUT_LINES_H_
