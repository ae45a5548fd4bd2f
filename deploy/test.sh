#!/usr/bin/env bash
# Installs the dependencies, builds everything and runs every test through ctest. Then the code
# without LibTorch again, with ASan + UBSan (clang) in build-asan/, and its tests: unit tests and
# the fuzz corpus replayed (docs/testing.md). TRAIND_SKIP_SANITIZERS=1 skips that second part;
# TRAIND_SANITIZE_INTEGRATION=1 adds tests/ to it (the sanitized daemon with build/'s worker).
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh --for test
# Formatting and function sizes first: seconds, and they fail before an hour of building does.
checks=0
deploy/check-format.sh || checks=1
deploy/check-function-size.sh || checks=1
start=$(date +%s)
deploy/build.sh
echo "test.sh: built in $(( $(date +%s) - start )) s"
start=$(date +%s)
deploy/check-thread-safety.sh || checks=1
echo "test.sh: clang's thread-safety check in $(( $(date +%s) - start )) s"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
main=0
ctest --test-dir build --output-on-failure -j"${TRAIND_TEST_JOBS:-2}" --timeout 600 2>&1 |
  tee "$logs/main" || main=$?
status=$main
[ $checks = 0 ] || status=1
# ctest prints "***Skipped" without the reason: print each skipped test's own words (GTEST_SKIP's
# message, or a script's "SKIPPED: ..." line) from its log.
skips() {
  awk '/^[0-9]+\/[0-9]+ Testing: / {name = $3}
       /: Skipped$/ {getline reason; printf "test.sh: skipped %s: %s\n", name, reason}
       /^SKIPPED: / {sub(/^SKIPPED: /, ""); printf "test.sh: skipped %s: %s\n", name, $0}' \
    "$1/Testing/Temporary/LastTest.log" 2>/dev/null
}
skips build
# A failed test's output, again at the very end: a CI log that keeps only its head and tail still
# shows why (ctest's --output-on-failure prints it in the middle of hundreds of lines).
failures() {
  awk -v suite="$1" '/^[0-9]+\/[0-9]+ Testing: / {name = $3; n = 0}
       /^Output:$/ {getline; inside = 1; next}
       /^<end of output>$/ {inside = 0}
       inside {lines[n++] = $0}
       /^Test Failed\.$/ || /^Test Timeout/ {
         printf "test.sh: %s failed in %s; its last lines:\n", name, suite
         for (i = (n > 60 ? n - 60 : 0); i < n; i++) print "  | " lines[i]}' \
    "$1/Testing/Temporary/LastTest.log" 2>/dev/null
}
verdict() { [ "$1" = 0 ] && echo "passed" || echo "FAILED (ctest exit $1; its failures are listed above)"; }
# "N passed, M failed" over the suites' ctest summaries ("... M tests failed out of T").
totals() {
  cat "$@" | awk '/tests failed out of/ {failed += $(NF-5); total += $NF}
                  END {printf "test.sh: %d passed, %d failed\n", total - failed, failed}'
}

if [ "${TRAIND_SKIP_SANITIZERS:-0}" = 1 ]; then
  echo "test.sh: TRAIND_SKIP_SANITIZERS=1: no ASan/UBSan build"
  failures build
  echo "test.sh: format, function-size and thread-safety checks $([ $checks = 0 ] && echo passed || echo FAILED); main suite $(verdict $main); exit $status"
  totals "$logs/main"
  exit $status
fi
start=$(date +%s)
worker=""
[ "${TRAIND_SANITIZE_INTEGRATION:-0}" = 1 ] && worker=$PWD/build/bin/traind-worker
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DTRAIND_SANITIZE=ON \
  -DCMAKE_CXX_COMPILER=clang++ -DTRAIND_WORKER="$worker" >/dev/null
cmake --build build-asan -j"${TRAIND_BUILD_JOBS:-2}"
echo "test.sh: ASan/UBSan build in $(( $(date +%s) - start )) s"
# UBSan stops at the first report (-fno-sanitize-recover); ASan reports leaks at exit (Linux:
# macOS's ASan has no leak checker).
asan=detect_stack_use_after_return=1:check_initialization_order=1:strict_string_checks=1
[ "$(uname -s)" = Linux ] && asan="detect_leaks=1:$asan"
sanitized=0
ASAN_OPTIONS=$asan UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"${TRAIND_TEST_JOBS:-2}" --timeout 600 2>&1 |
  tee "$logs/sanitized" || sanitized=$?
[ $sanitized = 0 ] || status=$sanitized
skips build-asan
failures build
failures build-asan
# One summary of both parts, last, so a failure far up is not hidden by a green second part.
echo "test.sh: format, function-size and thread-safety checks $([ $checks = 0 ] && echo passed || echo FAILED); main suite $(verdict $main);" \
  "ASan/UBSan suite $(verdict $sanitized); exit $status"
totals "$logs/main" "$logs/sanitized"
exit $status
