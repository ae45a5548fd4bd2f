#!/usr/bin/env bash
# Runs a command against a fresh traind: a private state directory (XDG_STATE_HOME, which traind
# and trainctl both read), the build's binaries first on PATH, and traind stopped afterwards.
#   tests/python/with_daemon.sh BIN_DIR COMMAND...
# Skips (exit 77, ctest's SKIP_RETURN_CODE) when the Python it uses has no torch: TRAIND_TEST_PYTHON,
# default /usr/bin/python3 (a CUDA host's wheel may live elsewhere); it is also the interpreter
# traind lets script jobs run as "python3".
set -euo pipefail
bin=$1
shift
py=${TRAIND_TEST_PYTHON:-/usr/bin/python3}
if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "SKIP: $py has no torch (deploy/install-deps.sh --for python installs python3-torch)"
  exit 77
fi
state=$(mktemp -d /tmp/traind-python-test.XXXXXX)
export XDG_STATE_HOME=$state
export PATH=$bin:$PATH
"$bin/traind" --data-root /tmp --python "python3=$py" >"$state/traind.log" 2>&1 &
traind_pid=$!
cleanup() {
  kill "$traind_pid" 2>/dev/null || true
  wait "$traind_pid" 2>/dev/null || true
  rm -rf "$state"
}
trap cleanup EXIT
for _ in $(seq 100); do
  [ -S "$state/traind/traind.sock" ] && break
  kill -0 "$traind_pid" 2>/dev/null || { cat "$state/traind.log"; exit 1; }
  sleep 0.1
done
# The tests themselves run with that Python too (ctest names /usr/bin/python3): they may import
# torch and numpy, which a CUDA host's wheel keeps in its own environment.
if [ "$1" = /usr/bin/python3 ]; then
  shift
  set -- "$py" "$@"
fi
status=0
"$@" || status=$?
[ $status = 0 ] || { echo "--- traind's log"; tail -30 "$state/traind.log"; }
exit $status
