#!/usr/bin/env bash
# Time to a trained model (issue 17): LeNet5 on Fashion-MNIST to >= 89% test accuracy, each
# configuration over several seeds, through a running traind, side by side with the best plain
# PyTorch loop we have (bench/reference/graph_reference.py: data on the GPU, the step in a CUDA
# graph, fused Adam, the same onecycle schedule), seeds interleaved.
# Per job: test accuracy, training time without the per-epoch evaluations (the sum of the job's
# epochSecondsNoEval; what the Python loop's time also leaves out), training time with them, and
# wall time from `trainctl submit` to SUCCEEDED as the client sees it. Then medians (min-max).
#   BUILD_DIR=build-cuda bench/time_to_accuracy.sh [DEVICE]          (default cuda:0)
#   SEEDS="1 2 3" CONFIGS=... (one flag set per line) REFERENCE=0 (no Python loop)
#   TRAIND_ENV="TRAIND_CUDNN_AUTOTUNE=1" (variables for traind and its workers)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
device=${1:-cuda:0}
seeds=${SEEDS:-1 2 3}
configs=${CONFIGS:-"--epochs 6 --batch-size 256 --lr 3e-3 --lr-schedule onecycle
--epochs 6 --batch-size 256 --lr 3e-3 --lr-schedule onecycle --no-cuda-graph --no-device-resident"}
state=$(mktemp -d /tmp/traind-tta.XXXXXX)
rows=$(mktemp /tmp/traind-tta-rows.XXXXXX)
trap 'stop_traind "$state"; rm -rf "$state" "$rows"' EXIT
# shellcheck disable=SC2086
start_traind "$state" ${TRAIND_ENV:-} || exit 1  # TRAIND_ENV="VAR=VALUE ...": traind's environment
export TRAINCTL_ADDR=unix:$state/traind.sock
echo "# $(date -u +%F) $device, $(nproc) cores; LeNet5 fashion-mnist; seeds: $seeds"
echo "| flags | seed | test accuracy | training s (no eval) | training s (with eval) | submit -> SUCCEEDED s |"
echo "|---|---|---|---|---|---|"
for seed in $seeds; do
  while IFS= read -r flags; do
    [ -z "$flags" ] && continue
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    id=$("$bin/trainctl" submit --model lenet5 --dataset fashion-mnist --device "$device" \
         --seed "$seed" $flags) || { echo "| $flags | $seed | submit failed |"; continue; }
    "$bin/trainctl" watch "$id" >/dev/null 2>&1
    end=$(date +%s.%N)
    "$bin/trainctl" show "$id" -o json | "$python" -c '
import json, sys
job = json.load(sys.stdin); r = job.get("result", {})
print("| %s | %s | %.4f | %.2f | %.2f | %.2f |" % (sys.argv[1], sys.argv[2], r.get("testAccuracy", 0),
      sum(r.get("epochSecondsNoEval", [])), r.get("trainSeconds", 0),
      float(sys.argv[4]) - float(sys.argv[3])))' "$flags" "$seed" "$start" "$end" | tee -a "$rows"
  done <<<"$configs"
  if [ "${REFERENCE:-1}" = 1 ] && [ "${device%%:*}" = cuda ]; then
    "$python" bench/reference/graph_reference.py --seed "$seed" 2>/dev/null | "$python" -c '
import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1]); e = r["epochs"][-1]
print("| python graph loop (to 89%%: %s s) | %s | %.4f | %.2f | - | - |" % (
      "%.2f" % r["seconds_to_target"] if r["seconds_to_target"] else "never", sys.argv[1],
      e["test_accuracy"] / 100, e["train_seconds"]))' "$seed" | tee -a "$rows"
  fi
done
echo
echo "| configuration | runs | >= 0.89 | training s (no eval), median (min-max) | submit -> SUCCEEDED s, median (min-max) |"
echo "|---|---|---|---|---|"
"$python" - "$rows" <<'PY'
import statistics, sys
groups = {}
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    name = cells[0].split(" (to 89%")[0]
    groups.setdefault(name, []).append(cells)
def summary(values):
    values = [float(v) for v in values if v not in ("-", "")]
    if not values:
        return "-"
    return "%.2f (%.2f-%.2f)" % (statistics.median(values), min(values), max(values))
for name, rows in groups.items():
    accurate = sum(float(r[2]) >= 0.89 for r in rows)
    print("| %s | %d | %d of %d | %s | %s |" % (name, len(rows), accurate, len(rows),
          summary(r[3] for r in rows), summary(r[5] for r in rows)))
PY
