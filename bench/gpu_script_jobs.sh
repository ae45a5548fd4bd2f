#!/usr/bin/env bash
# The seed's programs as script jobs on a CUDA host (issue 35): LeNet-5 on Fashion-MNIST with its
# own loop and DataLoader, and the ResNet-18 FakeData loop, each run unmodified by
# `trainctl run --device cuda` against a private traind, then the same program from a shell on
# the same GPU; prints each job's state, test accuracy, epoch times and memory, and both wall
# times. Needs python3 with torch (CUDA) and torchvision.
#   BUILD_DIR=build-cuda bench/gpu_script_jobs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
py=${PYTHON:-$(command -v python3)}
state=$(mktemp -d /tmp/gpu-script-jobs.XXXXXX)
trap 'stop_traind "$state"; rm -rf "$state"' EXIT
mkdir -p "$state/state"
"$bin/traind" --state-dir "$state/state" --python "python3=$py" >"$state/log" 2>&1 &
echo $! >"$state/pid"
export TRAINCTL_ADDR=unix:$state/state/traind.sock
for _ in $(seq 100); do "$bin/trainctl" devices >/dev/null 2>&1 && break; sleep 0.2; done
data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
run() {  # NAME PROGRAM ARGS...: the job, then the program from a shell
  local name=$1; shift
  local start id
  start=$(date +%s.%N)
  id=$("$bin/trainctl" run -C examples/scripts --device cuda --name "$name" -- python3 "$@")
  "$bin/trainctl" watch "$id" >/dev/null 2>&1 || true
  local traind_wall
  traind_wall=$("$py" -c "print(round($(date +%s.%N) - $start, 2))")
  JOB=$("$bin/trainctl" show "$id" --output json) NAME=$name "$py" -c '
import json, os
j = json.loads(os.environ["JOB"]); r = j.get("result", {})
times = [round(t, 2) for t in r.get("epochSecondsNoEval", [])]
print(os.environ["NAME"] + ": job", j["id"], j["state"], "test accuracy %.4f" % r.get("testAccuracy", 0),
      "epoch s", times, "peak RSS %d MiB" % (int(r.get("peakCurrentAllocatedBytes", 0)) >> 20),
      r.get("error", "")[:300])'
  "$bin/trainctl" logs "$id" | tail -n 3
  start=$(date +%s.%N)
  (cd examples/scripts && TRAIND_DEVICE=cuda "$py" "$@" >/dev/null)
  echo "$name: wall from submit to the end: traind $traind_wall s; the same from a shell $("$py" -c "print(round($(date +%s.%N) - $start, 2))") s"
}
run lenet5 lenet5_fashion.py --epochs 3 --data-dir "$data"
run resnet18 resnet18_fakedata.py --epochs 2 --samples 2560 --batch-size 128
