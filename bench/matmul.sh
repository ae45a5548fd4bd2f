#!/usr/bin/env bash
# Side by side: `trainctl bench matmul` and torch.mm in Python (bench/reference/matmul_reference.py),
# alternating, same n, dtype, warm-up and repetitions. Prints a markdown table.
#   DEVICE=cuda SIZE=10000 bench/matmul.sh fp32 tf32 bf16
# Needs a running traind (TRAINCTL_ADDR) or starts a private one.
set -euo pipefail
cd "$(dirname "$0")/.."
device=${DEVICE:-cpu}; size=${SIZE:-4096}; repeat=${REPEAT:-10}; rounds=${ROUNDS:-3}
dtypes=${*:-fp32}
python=${PYTHON:-$([ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null && echo /usr/bin/python3 || echo python3)}
bin=$PWD/${BUILD_DIR:-build}/bin
if [ -z "${TRAINCTL_ADDR:-}" ]; then
  state=$(mktemp -d /tmp/traind-bench.XXXXXX)
  "$bin/traind" --state-dir "$state" >"$state/log" 2>&1 &
  pid=$!
  trap 'kill $pid 2>/dev/null; rm -rf "$state"' EXIT
  export TRAINCTL_ADDR=unix:$state/traind.sock
  for _ in $(seq 1 100); do "$bin/trainctl" devices >/dev/null 2>&1 && break; sleep 0.2; done
fi
field() { "$python" -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
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
