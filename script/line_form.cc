#include "script/line_form.h"

namespace traind {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The end of the run of digits starting at `i`.
size_t RunEnd(absl::string_view text, size_t i) {
  while (i < text.size() && IsDigit(text[i])) ++i;
  return i;
}

}  // namespace

bool LineForm::Remember(absl::string_view line, absl::Span<const Range> fixed) {
  remembered_ = false;
  fixed_runs_ = 0;
  size_t run = 0;
  for (size_t i = 0; i < line.size();) {
    if (!IsDigit(line[i])) {
      ++i;
      continue;
    }
    const size_t end = RunEnd(line, i);
    for (const Range& range : fixed) {
      if (i < range.second && range.first < end) {
        if (run >= 64) return false;
        fixed_runs_ |= uint64_t{1} << run;
      }
    }
    ++run;
    i = end;
  }
  line_.assign(line.data(), line.size());
  remembered_ = true;
  return true;
}

bool LineForm::Matches(absl::string_view line) const {
  if (!remembered_) return false;
  const absl::string_view form = line_;
  size_t i = 0, j = 0, run = 0;
  while (i < form.size() && j < line.size()) {
    if (IsDigit(form[i]) && IsDigit(line[j])) {
      const size_t form_end = RunEnd(form, i), line_end = RunEnd(line, j);
      if (run < 64 && (fixed_runs_ >> run & 1) != 0 &&
          form.substr(i, form_end - i) != line.substr(j, line_end - j)) {
        return false;
      }
      ++run;
      i = form_end;
      j = line_end;
      continue;
    }
    if (form[i] != line[j]) return false;
    ++i;
    ++j;
  }
  return i == form.size() && j == line.size();
}

}  // namespace traind
