#!/usr/bin/env bash
# Side by side, in one run: epoch time without evaluation of a traind job and of the plain PyTorch
# reference loop (bench/reference/train_reference.py, with a DataLoader and with pre-batched
# tensors), same model, data, batch size, optimizer, seed and threads. Alternates the three for
# each round so machine noise hits all of them alike. Prints a markdown table.
#   bench/epoch_time.sh [ROUNDS] [MODELS...]     e.g. bench/epoch_time.sh 3 lenet5 mlp
# Needs build/bin (deploy/build.sh) and Python PyTorch (deploy/install-deps.sh --for python).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
rounds=${1:-1}; shift || true
models=${*:-lenet5 mlp}
threads=${THREADS:-0}          # 0: each side's default
device=${DEVICE:-cpu}
state=$(mktemp -d /tmp/traind-bench.XXXXXX)
trap 'stop_traind "$state/daemon"; rm -rf "$state"' EXIT
start_traind "$state/daemon"
export TRAINCTL_ADDR=unix:$state/daemon/traind.sock

thread_flag=(); [ "$threads" != 0 ] && thread_flag=(--threads "$threads")
# Extra submit flags for the traind side, e.g. TRAIND_FLAGS="--device-resident --cuda-graph".
read -r -a extra_flags <<<"${TRAIND_FLAGS:-}"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "| model | device | traind s/epoch | reference (DataLoader) s/epoch | reference (tensors) s/epoch | traind speedup vs DataLoader | vs tensors | traind test acc | reference test acc |"
echo "|---|---|---|---|---|---|---|---|---|"
for model in $models; do
  : >"$state/ours"; : >"$state/ref_dl"; : >"$state/ref_t"; : >"$state/acc_ours"; : >"$state/acc_ref"
  for _ in $(seq 1 "$rounds"); do
    id=$("$bin/trainctl" submit --model "$model" --dataset fashion-mnist --device "$device" --epochs 1 "${thread_flag[@]}" "${extra_flags[@]}")
    "$bin/trainctl" watch "$id" >/dev/null
    json=$("$bin/trainctl" show "$id" --output json)
    "$python" -c 'import json,sys; r=json.load(sys.stdin)["result"]; print(r["epochSecondsNoEval"][0])' <<<"$json" >>"$state/ours"
    "$python" -c 'import json,sys; r=json.load(sys.stdin)["result"]; print(r["testAccuracy"])' <<<"$json" >>"$state/acc_ours"
    for loader in dataloader tensor; do
      out=$("$python" bench/reference/train_reference.py --model "$model" --device "$device" --loader "$loader" --threads "$threads" | tail -1)
      file=$([ "$loader" = dataloader ] && echo ref_dl || echo ref_t)
      "$python" -c 'import json,sys; print(json.loads(sys.stdin.read())["epoch_seconds_no_eval"][0])' <<<"$out" >>"$state/$file"
      [ "$loader" = tensor ] && "$python" -c 'import json,sys; print(json.loads(sys.stdin.read())["test_accuracy"])' <<<"$out" >>"$state/acc_ref"
    done
  done
  ours=$(median <"$state/ours"); dl=$(median <"$state/ref_dl"); t=$(median <"$state/ref_t")
  printf '| %s | %s | %.2f | %.2f | %.2f | %.2fx | %.2fx | %.4f | %.4f |\n' "$model" "$device" "$ours" "$dl" "$t" \
    "$(ratio "$dl" "$ours")" "$(ratio "$t" "$ours")" "$(median <"$state/acc_ours")" "$(median <"$state/acc_ref")"
done
