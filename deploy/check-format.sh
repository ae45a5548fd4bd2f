#!/usr/bin/env bash
# Fails when a C++ source differs from the project's .clang-format (clang-format from Debian's
# clang-format package). Lists each such file and the command that fixes them all.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format not found (apt install clang-format)"; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t sources < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
else
  mapfile -t sources < <(find . -path ./build\* -prune -o \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print)
fi
differ=()
for source in "${sources[@]}"; do
  clang-format --style=file "$source" | cmp -s - "$source" || differ+=("$source")
done
if [ ${#differ[@]} -gt 0 ]; then
  printf 'check-format: not formatted: %s\n' "${differ[@]}"
  echo "check-format: ${#differ[@]} of ${#sources[@]} files differ; fix: git ls-files '*.cc' '*.h' '*.cu' '*.cuh' | xargs clang-format -i"
  exit 1
fi
echo "check-format: ${#sources[@]} files match .clang-format"
