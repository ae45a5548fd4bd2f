#!/usr/bin/env bash
# bf16 over fp32 for one traind setup at several batch sizes. Part of a step is per-parameter work
# that the batch size does not change and bf16 does not shrink (the fp32 Adam update; in bf16
# also autocast's casts of the weights and of their gradients); a larger batch lowers its share.
# This shows how much of the ratio that work takes. One daemon; per round and batch size the
# fp32 and the bf16 job alternate; medians of the rounds.
#
#   BUILD_DIR=build-cuda BATCHES="128 256 512" bench/amp_batches.sh vgg16 --dataset fake --image-size 32 --num-samples 12288
#
# FLAGS are `trainctl submit` flags (not --batch-size). Environment: BATCHES (default "128 256
# 512"), ROUNDS (default 2), EPOCHS (default 2; the time is the mean of epochs 2..N), DEVICE
# (default cuda), TRAIND_FLAGS (default --device-resident), HEADER=0 (rows only).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2; }
source bench/lib.sh
model=$1; shift
flags=("$@")
read -r -a batches <<<"${BATCHES:-128 256 512}"
read -r -a traind_flags <<<"${TRAIND_FLAGS---device-resident}"
rounds=${ROUNDS:-2}
state=$(mktemp -d /tmp/traind-bench.XXXXXX)
trap 'stop_traind "$state"; rm -rf "$state"' EXIT
start_traind "$state"
export TRAINCTL_ADDR=unix:$state/traind.sock

run() {  # batch, amp flags... -> seconds per epoch
  local batch=$1; shift
  epoch_seconds --model "$model" --device "${DEVICE:-cuda}" --epochs "${EPOCHS:-2}" \
    --batch-size "$batch" "${flags[@]}" "${traind_flags[@]}" "$@"
}

if [ "${HEADER:-1}" != 0 ]; then
  echo "| model | setup | traind flags | batch | fp32 s/epoch | bf16 s/epoch | bf16 over fp32 |"
  echo "|---|---|---|---:|---:|---:|---:|"
fi
for batch in "${batches[@]}"; do
  : >"$state/fp32"; : >"$state/bf16"
  for _ in $(seq 1 "$rounds"); do
    run "$batch" >>"$state/fp32"
    run "$batch" --amp bf16 >>"$state/bf16"
  done
  awk -v m="$model" -v s="${flags[*]}" -v t="${traind_flags[*]}" -v b="$batch" \
    -v f="$(median <"$state/fp32")" -v h="$(median <"$state/bf16")" \
    'BEGIN { printf "| %s | %s | %s | %d | %.3f | %.3f | **%.2fx** |\n", m, s, t, b, f, h, f/h }'
done
