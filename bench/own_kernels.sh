#!/usr/bin/env bash
# What traind's own CUDA kernels (models/cuda/: fused bf16 batch norm + ReLU, NHWC max-pool
# backward) buy: epoch time of the same traind job in fp32 and in bf16, each with PyTorch's kernels
# (a second daemon whose workers have TRAIND_NATIVE_KERNELS=1) and with traind's; the jobs
# alternate within each round, medians of the rounds; bf16 over fp32 is issue 7's bar.
#
#   BUILD_DIR=build-cuda ROUNDS=2 bench/own_kernels.sh resnet18 --dataset fake --image-size 224 --num-samples 4096 --batch-size 256
#
# FLAGS are `trainctl submit` flags. Environment: ROUNDS (default 2), EPOCHS (default 2; the time is
# the mean of epochs 2..N), TRAIND_FLAGS (default --device-resident), HEADER=0 (rows only).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2; }
source bench/lib.sh
model=$1; shift
flags=("$@")
rounds=${ROUNDS:-2}
epochs=${EPOCHS:-2}
read -r -a traind_flags <<<"${TRAIND_FLAGS---device-resident}"
state=$(mktemp -d /tmp/traind-bench.XXXXXX)
trap 'stop_traind "$state/own"; stop_traind "$state/native"; rm -rf "$state"' EXIT
start_traind "$state/own" TRAIND_NATIVE_KERNELS=0
start_traind "$state/native" TRAIND_NATIVE_KERNELS=1

run() {  # daemon, amp flags... -> seconds per epoch
  local daemon=$1; shift
  TRAINCTL_ADDR=unix:$state/$daemon/traind.sock epoch_seconds --model "$model" --device cuda \
    --epochs "$epochs" "${flags[@]}" "${traind_flags[@]}" "$@"
}

for _ in $(seq 1 "$rounds"); do
  run native >>"$state/fp32_native.times"
  run own >>"$state/fp32_own.times"
  run native --amp bf16 >>"$state/bf16_native.times"
  run own --amp bf16 >>"$state/bf16_own.times"
done
for f in fp32_native fp32_own bf16_native bf16_own; do printf -v "$f" %s "$(median <"$state/$f.times")"; done
if [ "${HEADER:-1}" != 0 ]; then
  echo "| model | setup | fp32, PyTorch's kernels s/epoch | fp32, traind's | bf16, PyTorch's | bf16, traind's | bf16 over fp32, PyTorch's kernels | bf16 over fp32, traind's kernels | traind's kernels in fp32 | in bf16 |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
fi
awk -v m="$model" -v s="${flags[*]}" -v a="$fp32_native" -v b="$fp32_own" -v c="$bf16_native" -v d="$bf16_own" \
  'BEGIN { printf "| %s | %s | %.3f | %.3f | %.3f | %.3f | %.2fx | **%.2fx** | %.2fx | %.2fx |\n", m, s, a, b, c, d, a/c, b/d, a/b, c/d }'
