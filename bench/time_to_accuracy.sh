#!/usr/bin/env bash
# Time to a trained model (issue 17): a model on Fashion-MNIST to a test accuracy (LeNet5, 89% by
# default), each configuration over several seeds, through a running traind, side by side with a
# plain PyTorch loop, seeds interleaved. On CUDA the loop is the best we have
# (bench/reference/graph_reference.py: data on the GPU, the step in a CUDA graph, fused Adam, the
# same onecycle schedule); on the CPU it is bench/reference/train_reference.py with its default
# recipe (batch 128, Adam 1e-3, tensors), for REF_EPOCHS epochs, its test accuracy evaluated after
# each epoch outside its clock.
# Per job: test accuracy, training time without the per-epoch evaluations (the sum of the job's
# epochSecondsNoEval; what the Python loops' times also leave out), training time with them, and
# wall time from `trainctl submit` to SUCCEEDED as the client sees it; per loop, its training
# time until its test accuracy first reached the target. Then medians (min-max).
#   BUILD_DIR=build-cuda bench/time_to_accuracy.sh [DEVICE]          (default cuda:0)
#   SEEDS="1 2 3" CONFIGS=... (one flag set per line) REFERENCE=0 (no Python loop)
#   GRAPH_FLAGS="--batch-size 1024 --lr 1e-2" (the CUDA loop's recipe; by default its own, the
#   issue's: --epochs 6 --batch-size 256 --lr 3e-3 onecycle, whatever CONFIGS say)
#   MODEL=mlp TARGET=0.88 REF_EPOCHS=10 (the CPU loop's epochs)
#   TRAIND_ENV="TRAIND_CUDNN_AUTOTUNE=1" (variables for traind and its workers)
#   PAUSE=3 (seconds before each job, so that it finds a warm worker ready; 0: back to back)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
device=${1:-cuda:0}
seeds=${SEEDS:-1 2 3}
model=${MODEL:-lenet5}
target=${TARGET:-0.89}
configs=${CONFIGS:-"--epochs 6 --batch-size 256 --lr 3e-3 --lr-schedule onecycle
--epochs 6 --batch-size 256 --lr 3e-3 --lr-schedule onecycle --no-cuda-graph --no-device-resident"}
state=$(mktemp -d /tmp/traind-tta.XXXXXX)
rows=$(mktemp /tmp/traind-tta-rows.XXXXXX)
trap 'stop_traind "$state"; rm -rf "$state" "$rows"' EXIT
# shellcheck disable=SC2086
start_traind "$state" ${TRAIND_ENV:-} || exit 1  # TRAIND_ENV="VAR=VALUE ...": traind's environment
export TRAINCTL_ADDR=unix:$state/traind.sock
echo "# $(date -u +%F) $device, $(nproc) cores; $model fashion-mnist to $target; seeds: $seeds"
echo "| flags | seed | test accuracy | training s (no eval) | training s (with eval) | submit -> SUCCEEDED s |"
echo "|---|---|---|---|---|---|"
for seed in $seeds; do
  while IFS= read -r flags; do
    [ -z "$flags" ] && continue
    # Each job finds a worker warm (its CUDA context and kernels loaded), as a user's job a few
    # seconds after the last does: back to back, a job waits for the previous one's successor.
    sleep "${PAUSE:-3}"
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    id=$("$bin/trainctl" submit --model "$model" --dataset fashion-mnist --device "$device" \
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
  if [ "${REFERENCE:-1}" = 1 ] && [ "${device%%:*}" = cuda ] && [ "$model" = lenet5 ]; then
    # shellcheck disable=SC2086
    "$python" bench/reference/graph_reference.py --seed "$seed" ${GRAPH_FLAGS:-} 2>/dev/null | "$python" -c '
import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1]); e = r["epochs"][-1]
print("| python graph loop (to 89%%: %s s) | %s | %.4f | %.2f | - | - |" % (
      "%.2f" % r["seconds_to_target"] if r["seconds_to_target"] else "never", sys.argv[1],
      e["test_accuracy"] / 100, e["train_seconds"]))' "$seed" | tee -a "$rows"
  elif [ "${REFERENCE:-1}" = 1 ] && [ "$device" = cpu ]; then
    "$python" bench/reference/train_reference.py --model "$model" --epochs "${REF_EPOCHS:-10}" \
        --loader tensor --seed "$seed" --test-each-epoch 2>/dev/null | tail -1 | "$python" -c '
import json, sys
r = json.loads(sys.stdin.read()); target = float(sys.argv[2]); spent, reached = 0.0, None
for seconds, accuracy in zip(r["epoch_seconds_no_eval"], r["test_accuracy_per_epoch"]):
    spent += seconds
    if reached is None and accuracy >= target:
        reached = "%.2f s, epoch %d" % (spent, r["test_accuracy_per_epoch"].index(accuracy) + 1)
print("| python reference loop (to %s: %s) | %s | %.4f | %.2f | - | - |" % (
      sys.argv[2], reached or "never", sys.argv[1], r["test_accuracy"], spent))' \
        "$seed" "$target" | tee -a "$rows"
  fi
done
echo
echo "| configuration | runs | >= $target | training s (no eval), median (min-max) | a loop's training s until its test accuracy first reached the target | submit -> SUCCEEDED s, median (min-max) |"
echo "|---|---|---|---|---|---|"
"$python" - "$rows" "$target" <<'PY'
import re, statistics, sys
groups = {}
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    name = cells[0].split(" (to ")[0]
    reached = re.search(r"\(to [0-9.%]+: ([0-9.]+) s", cells[0])
    cells.append(reached.group(1) if reached else "-")  # a loop's time to the target
    groups.setdefault(name, []).append(cells)
def summary(values):
    values = [float(v) for v in values if v not in ("-", "")]
    if not values:
        return "-"
    return "%.2f (%.2f-%.2f)" % (statistics.median(values), min(values), max(values))
for name, rows in groups.items():
    accurate = sum(float(r[2]) >= float(sys.argv[2]) for r in rows)
    print("| %s | %d | %d of %d | %s | %s | %s |" % (name, len(rows), accurate, len(rows),
          summary(r[3] for r in rows), summary(r[6] for r in rows), summary(r[5] for r in rows)))
PY
