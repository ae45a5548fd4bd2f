# The checks the shell tests (tests/remote, tests/slurm, tests/storage) share. Sourced after the
# test sets `work` (a scratch directory); `failures` counts what failed.
#   skip REASON...                      ctest's skip (exit 77), with the reason
#   pass / fail DESCRIPTION...          one line each
#   expect CODE DESCRIPTION PATTERN -- COMMAND...
#                                       COMMAND's exit code is CODE and PATTERN (an extended regex;
#                                       empty: anything) is in its stdout+stderr; else its tail
failures=0
skip() { echo "SKIPPED: $*"; exit 77; }
pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
expect() {
  local code=$1 what=$2 pattern=$3; shift 4
  "$@" >"$work/out" 2>&1
  local got=$?
  if [ "$got" != "$code" ]; then
    fail "$what: exit $got, expected $code"; sed 's/^/       /' "$work/out" | tail -8; return 1
  fi
  if [ -n "$pattern" ] && ! grep -Eq "$pattern" "$work/out"; then
    fail "$what: output lacks /$pattern/"; sed 's/^/       /' "$work/out" | tail -8; return 1
  fi
  pass "$what"
}
