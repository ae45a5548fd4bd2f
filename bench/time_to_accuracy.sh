#!/usr/bin/env bash
# Time to a trained model (issue 17): LeNet5 on Fashion-MNIST to >= 89% test accuracy, each
# configuration over several seeds, through a running traind: test accuracy, training time (the
# job's epochs) and wall time from `trainctl submit` to SUCCEEDED as the client sees it.
#   BUILD_DIR=build-cuda bench/time_to_accuracy.sh [DEVICE]          (default cuda:0)
#   SEEDS="1 2 3" CONFIGS=... to change what runs (CONFIGS: one flag set per line)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
device=${1:-cuda:0}
seeds=${SEEDS:-1 2 3}
configs=${CONFIGS:-"--epochs 10
--epochs 6 --batch-size 256 --lr 3e-3 --device-resident --cuda-graph
--epochs 6 --batch-size 256 --lr 3e-3 --device-resident --lr-schedule onecycle
--epochs 6 --batch-size 256 --lr 3e-3 --device-resident --lr-schedule cosine --warmup-epochs 0.5"}
state=$(mktemp -d /tmp/traind-tta.XXXXXX)
trap 'stop_traind "$state"; rm -rf "$state"' EXIT
start_traind "$state" || exit 1
export TRAINCTL_ADDR=unix:$state/traind.sock
echo "# $(date -u +%F) $device, $(nproc) cores; LeNet5 fashion-mnist; seeds: $seeds"
echo "# flags | seed | test accuracy | training s | submit->SUCCEEDED s"
while IFS= read -r flags; do
  [ -z "$flags" ] && continue
  for seed in $seeds; do
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    id=$("$bin/trainctl" submit --model lenet5 --dataset fashion-mnist --device "$device" \
         --seed "$seed" $flags) || { echo "$flags | $seed | submit failed"; continue; }
    "$bin/trainctl" watch "$id" >/dev/null 2>&1
    end=$(date +%s.%N)
    "$bin/trainctl" show "$id" -o json | "$python" -c '
import json, sys
job = json.load(sys.stdin); r = job.get("result", {})
print("%s | %s | %.4f | %.2f | %.2f" % (sys.argv[1], sys.argv[2], r.get("testAccuracy", 0),
      r.get("trainSeconds", 0), float(sys.argv[4]) - float(sys.argv[3])))' "$flags" "$seed" "$start" "$end"
  done
done <<<"$configs"
