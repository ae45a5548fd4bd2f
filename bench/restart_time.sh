#!/usr/bin/env bash
# How long traind takes to answer again after a restart on an existing state directory: from
# starting the process to the first answered `trainctl list` (ListJobs), ROUNDS times, alternating
# two builds side by side when a second bin directory is given.
#   bench/restart_time.sh STATE_DIR build/bin [OTHER_BIN_DIR]      (ROUNDS=5)
# The state is only read (the jobs in it are finished; traind re-queues none).
set -uo pipefail
state=$1; shift
rounds=${ROUNDS:-5}
one_restart() {  # bin -> seconds
  local bin=$1 sock t0 t1
  sock=$state/traind.sock
  t0=$(date +%s.%N)
  "$bin/traind" --state-dir "$state" >>"$state/restart_time.log" 2>&1 &
  local pid=$!
  until "$bin/trainctl" --addr "unix:$sock" list --limit 1 >/dev/null 2>&1; do
    kill -0 $pid 2>/dev/null || { echo "traind exited; see $state/restart_time.log" >&2; return 1; }
    sleep 0.01
  done
  t1=$(date +%s.%N)
  kill $pid; wait $pid 2>/dev/null
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}'
}
for round in $(seq 1 "$rounds"); do
  for bin in "$@"; do
    echo "$bin $(one_restart "$bin")"
  done
done | tee /dev/stderr | awk '{s[$1]=s[$1] " " $2} END {for (b in s) print b ":" s[b]}'
