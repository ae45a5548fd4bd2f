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
echo "| n | dtype | device | traind s/product | traind TFLOP/s | torch.mm s/product | torch.mm TFLOP/s | traind / torch.mm time |"
echo "|---|---|---|---|---|---|---|---|"
for dtype in $dtypes; do
  ours=(); ref=()
  for _ in $(seq 1 "$rounds"); do
    ours+=("$("$bin/trainctl" bench matmul --size "$size" --dtype "$dtype" --device "$device" --repeat "$repeat" -o json 2>/dev/null | field '["result"]["bench"]["seconds"]')")
    ref+=("$("$python" bench/reference/matmul_reference.py --size "$size" --dtype "$dtype" --device "$device" --repeat "$repeat" | field '["seconds"]')")
  done
  o=$(printf '%s\n' "${ours[@]}" | median); r=$(printf '%s\n' "${ref[@]}" | median)
  awk -v n="$size" -v d="$dtype" -v dev="$device" -v o="$o" -v r="$r" 'BEGIN {
    f = 2 * n * n * n / 1e12
    printf "| %d | %s | %s | %.4f | %.1f | %.4f | %.1f | %.3f |\n", n, d, dev, o, f / o, r, f / r, o / r }'
done
