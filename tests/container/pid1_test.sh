#!/usr/bin/env bash
# traind as PID 1 of its own PID namespace, as in a container started with `docker run traind`:
# its workers (a built-in job and a program's runner) must run, not take the daemon for dead
# because their parent's pid is 1; `trainctl shutdown` from outside the namespace must see it
# stop (its own "pid 1" is another pid here). Needs root and unshare; skips (77) otherwise.
#   tests/container/pid1_test.sh BIN_DIR
set -uo pipefail
bin=$(cd "${1:?usage: pid1_test.sh BIN_DIR}" && pwd)
# shellcheck source=../lib/checks.sh
source "$(dirname "$0")/../lib/checks.sh"  # skip, pass, fail, expect

command -v unshare >/dev/null || skip "no unshare (util-linux)"
unshare --pid --fork --mount-proc true 2>/dev/null || skip "cannot create a PID namespace here"

work=$(mktemp -d /tmp/traind-pid1.XXXXXX)
state=$work/state
export TRAINCTL_ADDR=unix:$state/traind.sock TRAINCTL_CONFIG=$work/none.toml
unshare --pid --fork --mount-proc --kill-child "$bin/traind" --state-dir "$state" \
  --data-root /tmp >"$work/traind.log" 2>&1 &
outer=$!
cleanup() { kill "$outer" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
until "$bin/trainctl" devices >/dev/null 2>&1; do
  kill -0 "$outer" 2>/dev/null || { cat "$work/traind.log"; fail "traind did not start"; exit 1; }
  sleep 0.1
done
expect 0 "traind says it is pid 1" "pid 1 in" -- cat "$work/traind.log"

data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
expect 0 "a built-in job runs under a PID-1 traind" "SUCCEEDED" -- "$bin/trainctl" submit \
  --model lenet5 --dataset fashion-mnist --data-dir "$data" --device cpu --epochs 1 \
  --limit-train 500 --limit-test 100 --watch
mkdir "$work/program"
echo "print('hello from a program')" >"$work/program/hello.py"
if [ -x /usr/bin/python3 ]; then
  id=$("$bin/trainctl" run -C "$work/program" --device cpu -- python3 hello.py)
  expect 0 "a program runs under a PID-1 traind" "hello from a program" -- \
    "$bin/trainctl" watch "$id"
fi
expect 0 "trainctl shutdown from outside the namespace sees it stop" "stopped" -- \
  "$bin/trainctl" shutdown
echo "$failures failure(s)"
[ "$failures" = 0 ]
