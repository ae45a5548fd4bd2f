#!/usr/bin/env bash
# Side by side: a traind job against the strongest loop a PyTorch 2.x user would write instead:
# bench/reference/train_reference.py through torch.compile with channels_last, cudnn.benchmark,
# fused Adam and the data on the device, in mode reduce-overhead and in
# max-autotune-no-cudagraphs (issue 36). Every round runs each side once per precision,
# alternating, so machine noise hits all alike. Reports the seconds per epoch without evaluation
# (the mean of epochs 2..N: epoch 1 pays one-time costs, the compilation among them) as medians
# [min-max], traind's speed against each compiled loop (above 1: traind is faster), and the
# compiled loops' first step (their compilation, from the inductor cache after the first round)
# separately.
#
#   bench/compile_compare.sh MODEL [FLAGS...]
#   BUILD_DIR=build-cuda bench/compile_compare.sh vgg16 --dataset fake --image-size 32 --num-samples 10000 --batch-size 128
#   BUILD_DIR=build-cuda bench/compile_compare.sh resnet18 --dataset fake --image-size 224 --num-samples 4096 --batch-size 256
#
# FLAGS go to both sides (trainctl submit's names, which the reference shares: see
# bench/epoch_compare.sh). Environment: DEVICE (default cuda), ROUNDS (3), EPOCHS (3),
# AMPS ("fp32 bf16"), MODES ("reduce-overhead max-autotune-no-cudagraphs"), TRAIND_FLAGS
# (default "--device-resident"), REF_FLAGS (default "--cudnn-benchmark --channels-last
# --fused-adam --device-resident"), RAW=FILE appends every run's numbers.
# Needs torch 2.x with a working torch.compile (Triton for CUDA): the CUDA host's wheel has them.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2; }
source bench/lib.sh
model=$1; shift
flags=("$@")
device=${DEVICE:-cuda}
rounds=${ROUNDS:-3}
epochs=${EPOCHS:-3}
read -r -a amps <<<"${AMPS-fp32 bf16}"
read -r -a modes <<<"${MODES-reduce-overhead max-autotune-no-cudagraphs}"
read -r -a traind_flags <<<"${TRAIND_FLAGS---device-resident}"
read -r -a ref_flags <<<"${REF_FLAGS---cudnn-benchmark --channels-last --fused-adam --device-resident}"
raw=${RAW:-/dev/null}
"$python" -c 'import torch, sys; sys.exit(0 if hasattr(torch, "compile") else 1)' ||
  { echo "compile_compare: $python's torch has no torch.compile (torch 2.x needed)" >&2; exit 2; }

state=$(mktemp -d /tmp/traind-compile.XXXXXX)
trap 'stop_traind "$state/daemon"; rm -rf "$state"' EXIT
start_traind "$state/daemon"
export TRAINCTL_ADDR=unix:$state/daemon/traind.sock

amp_flags() { [ "$1" = fp32 ] || echo "--amp $1"; }

run_traind() {  # amp -> seconds per epoch
  local amp=(); read -r -a amp <<<"$(amp_flags "$1")"
  local id times
  id=$("$bin/trainctl" submit --model "$model" --device "$device" --epochs "$epochs" \
       "${flags[@]}" "${traind_flags[@]}" "${amp[@]}")
  times=$(job_epoch_times "$id")
  [ "$times" != "[]" ] || { echo "traind job $id failed: $("$bin/trainctl" show "$id")" >&2; return 1; }
  echo "traind $model $1 $times" >>"$raw"; echo "traind $1: $times" >&2
  steady "$times"
}

run_compiled() {  # amp mode -> "seconds-per-epoch first-step-seconds"
  local amp=(); read -r -a amp <<<"$(amp_flags "$1")"
  local out
  out=$("$python" bench/reference/train_reference.py --model "$model" --device "$device" \
        --epochs "$epochs" "${flags[@]}" "${ref_flags[@]}" "${amp[@]}" --compile "$2" | tail -1)
  echo "compiled $model $1 $2 $out" >>"$raw"
  "$python" -c '
import json, sys
d = json.loads(sys.argv[1]); t = d["epoch_seconds_no_eval"]; t = t[1:] or t
print(sum(t) / len(t), d["first_step_seconds"])
print("compiled %s %s: epochs %s, first step %.2f s, test accuracy %.4f" % (sys.argv[2], sys.argv[3],
      d["epoch_seconds_no_eval"], d["first_step_seconds"], d["test_accuracy"]), file=sys.stderr)
' "$out" "$1" "$2"
}

for _ in $(seq 1 "$rounds"); do
  for amp in "${amps[@]}"; do
    run_traind "$amp" >>"$state/traind_$amp"
    for mode in "${modes[@]}"; do
      read -r epoch first < <(run_compiled "$amp" "$mode")
      echo "$epoch" >>"$state/compiled_${amp}_$mode"
      echo "$first" >>"$state/first_${amp}_$mode"
    done
  done
done

ratio() { awk -v a="$(median <"$1")" -v b="$(median <"$2")" 'BEGIN { printf "%.2fx", a / b }'; }
echo "# $(date -u +%F), $device, $("$python" -c 'import torch; print("torch", torch.__version__)'), $rounds rounds, $epochs epochs (mean of 2..N); $model ${flags[*]}"
echo "| precision | traind s/epoch | torch.compile mode | compiled s/epoch | traind's speed vs it | compiled first step (compile), s |"
echo "|---|---|---|---|---|---|"
for amp in "${amps[@]}"; do
  for mode in "${modes[@]}"; do
    echo "| $amp | $(median_range <"$state/traind_$amp") | $mode | $(median_range <"$state/compiled_${amp}_$mode") | $(ratio "$state/compiled_${amp}_$mode" "$state/traind_$amp") | $(median_range <"$state/first_${amp}_$mode") |"
  done
done
