// Text from the daemon (job names, errors, logs, anything another user or a job wrote) made safe to
// print on a terminal: control characters are shown escaped instead of acting, so an escape
// sequence cannot recolour, move the cursor or retitle a terminal, and a newline or carriage
// return in a job name cannot forge a row of `trainctl list`.
#ifndef TRAIND_COMMON_TERMINAL_TEXT_H_
#define TRAIND_COMMON_TERMINAL_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace traind {

// Escapes C0 controls (as \n, \r, \t, \xNN), DEL, C1 controls (\u0080-\u009f, which some
// terminals also obey), bidirectional overrides (\u202a-\u202e, \u2066-\u2069, which reorder
// what is shown) and bytes that are not UTF-8 (\xNN). A backslash stays as it is. With
// `keep_newlines`, '\n' and '\t' pass through (logs, tracebacks); everything else is escaped still.
std::string TerminalSafe(absl::string_view text, bool keep_newlines = false);

// The length of the UTF-8 sequence at `text[i]` and its code point, or 0 when it is not valid
// UTF-8 (overlong forms, surrogates and code points above U+10FFFF included). Also
// script/output_lines.h's ValidUtf8.
size_t DecodeUtf8(absl::string_view text, size_t i, uint32_t* code_point);

}  // namespace traind

#endif  // TRAIND_COMMON_TERMINAL_TEXT_H_
