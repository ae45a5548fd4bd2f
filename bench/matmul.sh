#!/usr/bin/env bash
# Side by side: `trainctl bench matmul` and torch.mm in Python (bench/reference/matmul_reference.py),
# alternating, same n, dtype, warm-up and repetitions. Prints a markdown table.
#   DEVICE=cuda SIZE=10000 bench/matmul.sh fp32 tf32 bf16
# Needs a running traind (TRAINCTL_ADDR) or starts a private one.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
device=${DEVICE:-cpu}; size=${SIZE:-4096}; repeat=${REPEAT:-10}; rounds=${ROUNDS:-3}
dtypes=${*:-fp32}
if [ -z "${TRAINCTL_ADDR:-}" ]; then
  state=$(mktemp -d /tmp/traind-bench.XXXXXX)
  trap 'stop_traind "$state"; rm -rf "$state"' EXIT
  start_traind "$state"
  export TRAINCTL_ADDR=unix:$state/traind.sock
fi
field() { "$python" -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }
# Each side's seconds per product and CPU threads, round by round, alternating.
echo "| n | dtype | device | traind s/product [min-max] | TFLOP/s | threads | torch.mm s/product [min-max] | TFLOP/s | threads | traind / torch.mm time |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for dtype in $dtypes; do
  ours=(); ref=(); ours_threads=""; ref_threads=""
  for _ in $(seq 1 "$rounds"); do
    job=$("$bin/trainctl" bench matmul --size "$size" --dtype "$dtype" --device "$device" --repeat "$repeat" -o json 2>/dev/null)
    ours+=("$(field '["result"]["bench"]["seconds"]' <<<"$job")")
    ours_threads=$(field '["result"]["bench"].get("threads", "-")' <<<"$job")
    out=$("$python" bench/reference/matmul_reference.py --size "$size" --dtype "$dtype" --device "$device" --repeat "$repeat")
    ref+=("$(field '["seconds"]' <<<"$out")")
    ref_threads=$(field '["threads"]' <<<"$out")
  done
  o=$(printf '%s\n' "${ours[@]}" | median); r=$(printf '%s\n' "${ref[@]}" | median)
  tflops() { awk -v n="$size" -v s="$1" 'BEGIN {printf "%.2f", 2 * n * n * n / 1e12 / s}'; }
  echo "| $size | $dtype | $device | $(printf '%s\n' "${ours[@]}" | median_range %.4f) | $(tflops "$o") | $ours_threads | $(printf '%s\n' "${ref[@]}" | median_range %.4f) | $(tflops "$r") | $ref_threads | $(awk -v o="$o" -v r="$r" 'BEGIN {printf "%.3f", o / r}') |"
done
