#!/usr/bin/env bash
# Everything measured on the CUDA host, in one go (the host starts bare; see ../shared/GPU.md):
# the CPU-vs-CUDA sweep and its report, matmul against torch.mm, and epoch times against the
# Python reference on the GPU. Writes into OUT (default ./gpu-results).
#   bash .gpu/host-build.sh && BUILD_DIR=build-cuda bench/gpu_run.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-results}; mkdir -p "$out"
export BUILD_DIR=${BUILD_DIR:-build-cuda}
bin=$PWD/$BUILD_DIR/bin
state=$(mktemp -d /tmp/traind-gpu.XXXXXX)
"$bin/traind" --state-dir "$state" >"$out/traind.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
export TRAINCTL_ADDR=unix:$state/traind.sock
for _ in $(seq 1 100); do "$bin/trainctl" devices >/dev/null 2>&1 && break; sleep 0.2; done
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; } >"$out/machine.txt"
"$bin/trainctl" devices >>"$out/machine.txt"

sweep=$("$bin/trainctl" sweep bench/gpu_sweep.yaml)
time "$bin/trainctl" watch --sweep "$sweep" >"$out/sweep_watch.txt" 2>&1
"$bin/trainctl" report "$sweep" --format markdown >"$out/sweep.md"
"$bin/trainctl" report "$sweep" --format json >"$out/sweep.json"
"$bin/trainctl" report "$sweep" --plot "$out/sweep.svg" >"$out/sweep.txt"
cat "$out/sweep.txt"

DEVICE=cuda SIZE=10000 REPEAT=20 ROUNDS=3 bench/matmul.sh fp32 tf32 bf16 >"$out/matmul_cuda.md"
DEVICE=cpu SIZE=4096 REPEAT=5 ROUNDS=1 bench/matmul.sh fp32 bf16 >"$out/matmul_cpu.md"
cat "$out"/matmul_*.md
DEVICE=cuda bench/epoch_time.sh 1 lenet5 mlp >"$out/epoch_cuda.md" 2>"$out/epoch_cuda.err"
DEVICE=cpu bench/epoch_time.sh 1 lenet5 mlp >"$out/epoch_cpu.md" 2>"$out/epoch_cpu.err"
cat "$out"/epoch_*.md
