#!/usr/bin/env bash
# Fails when a function in the project's C++ sources runs past 100 lines (issue 34: each function
# one concern a newcomer can name). Flag tables are the one exception, listed below by name. The
# sources (.cu too) are clang-formatted (check-format.sh), so a function definition starts at
# column 0 and ends with a "}" alone on a line; a struct or a table initializer ends with "};" and
# is not one.
# Not seen: member functions defined inside a class body (indented; the project keeps those short
# by habit, and long ones in the .cc).
set -euo pipefail
cd "$(dirname "$0")/.."
limit=100
# "FILE:FIRST LINE OF THE DEFINITION" of the flag tables that may be longer.
tables=(
  "client/spec_flags.cc:const std::vector<SpecFlagInfo>& SpecFlagTable() {"
)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t sources < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' | grep -v '_test\.cc$')
else
  mapfile -t sources < <(find . \( -path './build*' -o -name node_modules \) -prune -o \
    \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) ! -name '*_test.cc' -print | sed 's|^\./||')
fi
[ ${#sources[@]} -gt 0 ] || { echo "check-function-size: no sources found"; exit 1; }
too_long=$(awk -v limit=$limit -v tables="$(printf '%s\n' "${tables[@]}")" '
  BEGIN { n = split(tables, t, "\n"); for (i = 1; i <= n; i++) allowed[t[i]] = 1 }
  FNR == 1 { start = 0; head = ""; inside = 0 }
  # A line at column 0 that is not a comment, a preprocessor line or a closing brace starts a
  # definition (or a declaration, which the next such line replaces). Once its body has opened,
  # a column-0 line within it (a raw string) does not start another.
  /^[^ \t#\/}]/ && !inside { start = FNR; head = $0 }
  start > 0 && !inside && /\{$/ && head !~ /^(inline )?namespace/ &&
    head !~ /^extern "C(\+\+)?" *\{$/ { inside = 1 }
  /^}/ && !/^}$/ { start = 0; inside = 0 }
  /^}$/ && start > 0 {
    length_ = FNR - start + 1
    if (length_ > limit && !((FILENAME ":" head) in allowed)) {
      printf "%s:%d: %d lines: %s\n", FILENAME, start, length_, substr(head, 1, 100)
    }
    start = 0
    inside = 0
  }
' "${sources[@]}")
if [ -n "$too_long" ]; then
  echo "$too_long"
  echo "check-function-size: $(echo "$too_long" | wc -l) functions longer than $limit lines: split each into steps with names"
  exit 1
fi
echo "check-function-size: no function in ${#sources[@]} files is longer than $limit lines (flag tables aside)"
