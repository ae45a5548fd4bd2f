#!/usr/bin/env bash
# From a fresh clone: install dependencies, build, start traind (unless one is running) with its
# dashboard on 127.0.0.1:8471 (TRAIND_HTTP overrides; a free port if that one is taken), train
# LeNet5 on Fashion-MNIST for one epoch on the best device, follow it to the end and print the
# dashboard's login link. It installs only what building and running need (install-deps.sh --for
# run), builds only the programs it runs, and says how long each part took (docs/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."
began=$(date +%s)
timings=()
part_start=$began
part_done() {  # part_done NAME: records how long the part since the last one took
  local now
  now=$(date +%s)
  timings+=("$1 $((now - part_start)) s")
  echo "quickstart: $1 took $((now - part_start)) s"
  part_start=$now
}
deploy/install-deps.sh --for run
part_done "installing the dependencies"
TRAIND_BUILD_TESTS=OFF deploy/build.sh --target traind traind-worker trainctl
part_done "building traind, its worker and trainctl"

bin=$PWD/build/bin
state_dir=${XDG_STATE_HOME:-$HOME/.local/state}/traind
if "$bin/trainctl" devices >/dev/null 2>&1; then
  echo "quickstart: traind is already running"
else
  mkdir -p "$state_dir"
  start_traind() {
    echo "quickstart: starting traind, dashboard on $1 (state and log in $state_dir)"
    nohup "$bin/traind" --state-dir "$state_dir" --http "$1" >>"$state_dir/traind.log" 2>&1 &
    traind_pid=$!
    for _ in $(seq 1 100); do
      "$bin/trainctl" devices >/dev/null 2>&1 && return 0
      kill -0 "$traind_pid" 2>/dev/null || return 1
      sleep 0.2
    done
  }
  start_traind "${TRAIND_HTTP:-127.0.0.1:8471}" ||
    { echo "quickstart: that port is taken; letting traind pick a free one"; start_traind 127.0.0.1:0; }
fi
"$bin/trainctl" devices
part_done "starting traind"
echo
echo "quickstart: training LeNet5 on Fashion-MNIST (1 epoch)"
status=0
"$bin/trainctl" submit --model lenet5 --dataset fashion-mnist --epochs 1 --watch || status=$?
part_done "training LeNet5's epoch"
total=$(( $(date +%s) - began ))
dashboard=$(sed -n 's/^traind: dashboard: \(http[^ ]*\)$/\1/p' "$state_dir/traind.log" 2>/dev/null | tail -1)
cat <<MSG

Timings: $(IFS=';'; echo "${timings[*]}" | sed 's/;/; /g'); $((total / 60)) min $((total % 60)) s in all.

Dashboard (queue, live curves, sweeps): open this link once; it logs the browser in
  ${dashboard:-(this traind runs without --http; restart it with --http 127.0.0.1:8471)}
Used already? Log in with the token in $state_dir/http.token.

Next:
  export PATH=$bin:\$PATH
  trainctl list                 # every job
  trainctl show ID              # one job's result (add --output json for scripts)
  trainctl logs ID              # its log in the reference scripts' format
  trainctl submit --model mlp --dataset fashion-mnist --epochs 10 --watch

traind keeps running after this script (pid $(cat "$state_dir/traind.pid" 2>/dev/null || echo "in $state_dir/traind.pid"),
log in $state_dir/traind.log). Stop this one, and no other user's:
  $bin/trainctl shutdown        # running jobs checkpoint; queued jobs stay queued
To run it as a user service that starts at login and restarts on failure: deploy/traind.service.
MSG
exit $status
