#!/usr/bin/env bash
# From a fresh clone: install dependencies, build, start traind (unless one is running), train
# LeNet5 on Fashion-MNIST for one epoch on the best device and follow it to the end.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
deploy/build.sh --target traind traind-worker trainctl

bin=$PWD/build/bin
state_dir=${XDG_STATE_HOME:-$HOME/.local/state}/traind
if "$bin/trainctl" devices >/dev/null 2>&1; then
  echo "quickstart: traind is already running"
else
  mkdir -p "$state_dir"
  echo "quickstart: starting traind (state and log in $state_dir)"
  nohup "$bin/traind" --state-dir "$state_dir" >>"$state_dir/traind.log" 2>&1 &
  for _ in $(seq 1 100); do
    "$bin/trainctl" devices >/dev/null 2>&1 && break
    sleep 0.2
  done
fi
"$bin/trainctl" devices
echo
echo "quickstart: training LeNet5 on Fashion-MNIST (1 epoch)"
status=0
"$bin/trainctl" submit --model lenet5 --dataset fashion-mnist --epochs 1 --watch || status=$?
cat <<MSG

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
