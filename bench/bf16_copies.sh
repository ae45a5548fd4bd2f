#!/usr/bin/env bash
# What training conv and linear weights through bf16 copies buys (engine/cuda/master_weight_adam.h,
# used by the CUDA-graph step under --amp bf16): the same traind job in fp32, in bf16 with
# autocast's casts (a second daemon whose workers have TRAIND_BF16_WEIGHT_COPIES=0) and in bf16
# with the copies; the three alternate within each round. Prints seconds per epoch as the median
# [min-max] of the rounds, and bf16 over fp32 (issue 17's bar) as the ratio of the medians with
# the range of the rounds' own ratios.
#
#   BUILD_DIR=build-cuda ROUNDS=3 bench/bf16_copies.sh vgg16 --dataset fake --image-size 32 --num-samples 24576 --batch-size 128
#
# FLAGS are `trainctl submit` flags. Environment: ROUNDS (default 3), EPOCHS (default 3; the time is
# the mean of epochs 2..N), DEVICE (default cuda), HEADER=0 (rows only).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2; }
source bench/lib.sh
model=$1; shift
flags=("$@")
rounds=${ROUNDS:-3}
state=$(mktemp -d /tmp/traind-bench.XXXXXX)
trap 'stop_traind "$state/copies"; stop_traind "$state/casts"; rm -rf "$state"' EXIT
start_traind "$state/copies" TRAIND_BF16_WEIGHT_COPIES=1
start_traind "$state/casts" TRAIND_BF16_WEIGHT_COPIES=0

run() {  # daemon, amp flags... -> seconds per epoch
  local daemon=$1; shift
  TRAINCTL_ADDR=unix:$state/$daemon/traind.sock epoch_seconds --model "$model" \
    --device "${DEVICE:-cuda}" --epochs "${EPOCHS:-3}" "${flags[@]}" "$@"
}

for _ in $(seq 1 "$rounds"); do
  run copies >>"$state/fp32"
  run casts --amp bf16 >>"$state/casts.bf16"
  run copies --amp bf16 >>"$state/copies.bf16"
done
# One line per round: fp32, bf16 with casts, bf16 with copies.
paste "$state/fp32" "$state/casts.bf16" "$state/copies.bf16" >"$state/rounds"
summary() { cut -f"$1" "$state/rounds" | median_range; }  # column -> "median [min-max]"
ratio() {  # numerator column, denominator column -> "ratio of medians [min-max of the rounds']"
  awk -v a="$(cut -f"$1" "$state/rounds" | median)" -v b="$(cut -f"$2" "$state/rounds" | median)" \
    'BEGIN {printf "%.2fx ", a/b}'
  awk -F'\t' -v i="$1" -v j="$2" '{print $i/$j}' "$state/rounds" | median_range %.2f |
    sed 's/^[^ ]* //'
}
if [ "${HEADER:-1}" != 0 ]; then
  echo "| model | setup | rounds | fp32 s/epoch | bf16, autocast's casts | bf16, weight copies | bf16 over fp32, casts | **bf16 over fp32, copies** | copies over casts |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
fi
echo "| $model | ${flags[*]} | $rounds | $(summary 1) | $(summary 2) | $(summary 3) | $(ratio 1 2) | **$(ratio 1 3)** | $(ratio 2 3) |"
