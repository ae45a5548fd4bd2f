#!/usr/bin/env bash
# Everything measured on the CUDA host, in one go (the host starts bare; see ../shared/GPU.md):
# the CPU-vs-CUDA sweep and its report, matmul against torch.mm, epoch times against the Python
# reference for LeNet5/MLP (fashion-mnist) and for VGG16/ResNet-18 (fake data) on the GPU and on
# the host's CPU. Writes into OUT (default ./gpu-results).
#   bash .gpu/host-build.sh && BUILD_DIR=build-cuda bench/gpu_run.sh
#   PARTS="conv cpu-conv" BUILD_DIR=build-cuda bench/gpu_run.sh      # only some parts
# Parts: sweep matmul epoch conv cpu-conv (default: all), and on request: precision (VGG16 224 px
# and ResNet-18 in fp32, bf16 and fp16: PRECISION_SETUPS and PRECISION_AMPS pick), own-kernels
# (traind's CUDA kernels against PyTorch's: bench/own_kernels.sh, OWN_ROUNDS rounds), profile
# (the tuned reference's kernels by device time per step; PROFILE_RUNS="vgg16 --image-size 32
# --num-samples 2816 --batch-size 128" and PROFILE_PRECISIONS="fp32 bf16" for VGG16 at 32 px),
# bn-probe (whether cuDNN's batch norm takes bf16 data and how fast it is:
# bench/reference/batch_norm_probe.py), amp-batches (bf16 over fp32 for VGG16 at 32 px at batch
# sizes AMP_BATCHES, eager and with --cuda-graph: bench/amp_batches.sh). On the H200 `conv` takes about 5-6
# minutes per setup at 3 rounds (18 runs of 15-20 s: process start, data, cuDNN autotuning, two
# epochs and their evaluation), more than one 10-minute device command holds for all three: run
# the setups one per command with bench/epoch_compare.sh, or lower CONV_ROUNDS.
set -uo pipefail
cd "$(dirname "$0")/.."
export BUILD_DIR=${BUILD_DIR:-build-cuda}
source bench/lib.sh
out=${OUT:-gpu-results}; mkdir -p "$out"
parts=" ${PARTS:-sweep matmul epoch conv cpu-conv} "
has() { [[ "$parts" == *" $1 "* ]]; }
state=$(mktemp -d /tmp/traind-gpu.XXXXXX)
trap 'stop_traind "$state"; cp "$state/log" "$out/traind.log"; rm -rf "$state"' EXIT
start_traind "$state" || exit 1
export TRAINCTL_ADDR=unix:$state/traind.sock
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; } >"$out/machine.txt"
"$bin/trainctl" devices >>"$out/machine.txt"

if has sweep; then
  sweep=$("$bin/trainctl" sweep bench/gpu_sweep.yaml)
  time "$bin/trainctl" watch --sweep "$sweep" >"$out/sweep_watch.txt" 2>&1
  "$bin/trainctl" report "$sweep" --format markdown >"$out/sweep.md"
  "$bin/trainctl" report "$sweep" --format json >"$out/sweep.json"
  "$bin/trainctl" report "$sweep" --plot "$out/sweep.svg" >"$out/sweep.txt"
  cat "$out/sweep.txt"
fi

if has matmul; then
  DEVICE=cuda SIZE=10000 REPEAT=20 ROUNDS=3 bench/matmul.sh fp32 tf32 bf16 >"$out/matmul_cuda.md"
  DEVICE=cpu SIZE=4096 REPEAT=5 ROUNDS=1 bench/matmul.sh fp32 bf16 >"$out/matmul_cpu.md"
  cat "$out"/matmul_*.md
fi

if has epoch; then
  DEVICE=cuda bench/epoch_time.sh 1 lenet5 mlp >"$out/epoch_cuda.md" 2>"$out/epoch_cuda.err"
  DEVICE=cpu bench/epoch_time.sh 1 lenet5 mlp >"$out/epoch_cpu.md" 2>"$out/epoch_cpu.err"
  cat "$out"/epoch_*.md
fi

# VGG16 and ResNet-18 on fake data, traind vs the reference, fp32 and bf16 (issue 7). One table;
# each setup's rows come from its own bench/epoch_compare.sh run.
conv_table() {  # device file setups...  (each setup: "model flags...")
  local device=$1 file=$2; shift 2
  local header=1
  : >"$file"
  for setup in "$@"; do
    # shellcheck disable=SC2086
    DEVICE=$device HEADER=$header RAW="$out/conv_raw_$device.txt" bench/epoch_compare.sh $setup \
      >>"$file" 2>>"$out/conv_$device.err" || echo "FAILED: $setup" >>"$file"
    header=0
  done
  cat "$file"
}
if has conv; then
  ROUNDS=${CONV_ROUNDS:-3} EPOCHS=2 conv_table cuda "$out/conv_cuda.md" \
    "vgg16 --dataset fake --image-size 32 --num-samples 12288 --batch-size 128" \
    "vgg16 --dataset fake --image-size 224 --num-samples 1536 --batch-size 64" \
    "resnet18 --dataset fake --image-size 224 --num-samples 4096 --batch-size 256"
fi
if has precision; then
  # What bf16 gains over fp32 (PyTorch's default: TF32 convolutions), with fp16 beside it because
  # PyTorch sends fp16 batch norm to cuDNN and bf16 batch norm not. PRECISION_AMPS="fp32-strict
  # fp32 bf16" is what session 3 ran (strict fp32's first epoch alone takes 94 s for VGG16).
  setups=${PRECISION_SETUPS:-resnet18 vgg16}
  file="$out/precision_cuda.md"; header=1; : >"$file"
  for model in $setups; do
    case $model in
      vgg16) setup="vgg16 --dataset fake --image-size 224 --num-samples 1536 --batch-size 64" ;;
      resnet18) setup="resnet18 --dataset fake --image-size 224 --num-samples 4096 --batch-size 256" ;;
    esac
    # shellcheck disable=SC2086
    DEVICE=cuda AMPS=${PRECISION_AMPS:-fp32 bf16 fp16} ROUNDS=${PRECISION_ROUNDS:-2} EPOCHS=2 HEADER=$header \
      RAW="$out/precision_raw.txt" bench/epoch_compare.sh $setup >>"$file" 2>>"$out/precision.err" \
      || echo "FAILED: $setup" >>"$file"
    header=0
  done
  cat "$file"
fi
if has own-kernels; then
  # traind's own CUDA kernels against PyTorch's, fp32 and bf16 (bench/own_kernels.sh): the bf16
  # bar's table. About a minute per setup and round.
  file="$out/own_kernels.md"; header=1; : >"$file"
  for setup in "resnet18 --dataset fake --image-size 224 --num-samples 4096 --batch-size 256" \
               "vgg16 --dataset fake --image-size 224 --num-samples 1536 --batch-size 64" \
               "vgg16 --dataset fake --image-size 32 --num-samples 12288 --batch-size 128"; do
    # shellcheck disable=SC2086
    HEADER=$header ROUNDS=${OWN_ROUNDS:-2} bench/own_kernels.sh $setup >>"$file" \
      2>>"$out/own_kernels.err" || echo "FAILED: $setup" >>"$file"
    header=0
  done
  HEADER=0 ROUNDS=${OWN_ROUNDS:-2} TRAIND_FLAGS="--device-resident --cuda-graph" \
    bench/own_kernels.sh vgg16 --dataset fake --image-size 32 --num-samples 12288 --batch-size 128 \
    >>"$file" 2>>"$out/own_kernels.err" || echo "FAILED: vgg16 32 px --cuda-graph" >>"$file"
  cat "$file"
fi
if has profile; then
  # Where a step's device time goes, per precision: the tuned reference runs the kernels traind
  # runs (same torch, cuDNN autotuning, channels_last, fused Adam, data on the GPU), but not
  # traind's own (models/cuda/). PROFILE_RUNS picks setups, PROFILE_PRECISIONS precisions.
  read -r -a profile_precisions <<<"${PROFILE_PRECISIONS:-fp32-strict fp32 bf16}"
  IFS=';' read -r -a profile_runs <<<"${PROFILE_RUNS:-vgg16 --image-size 224 --num-samples 704 --batch-size 64;resnet18 --image-size 224 --num-samples 2816 --batch-size 256}"
  for run in "${profile_runs[@]}"; do
    for name in "${profile_precisions[@]}"; do
      case $name in
        fp32-strict) precision="--tf32 off" ;;
        fp32) precision="" ;;
        *) precision="--amp $name" ;;
      esac
      # shellcheck disable=SC2086
      echo "== $run $precision" >>"$out/profile_cuda.txt"
      # shellcheck disable=SC2086
      "$python" bench/reference/train_reference.py --device cuda --dataset fake --epochs 1 \
        --cudnn-benchmark --channels-last --fused-adam --device-resident --profile-steps 5 \
        --model $run $precision 2>&1 | grep -v '^Epoch' >>"$out/profile_cuda.txt"
    done
  done
  cat "$out/profile_cuda.txt"
fi
if has amp-batches; then
  file="$out/amp_batches.md"
  BATCHES=${AMP_BATCHES:-128 256 512} bench/amp_batches.sh vgg16 --dataset fake --image-size 32 \
    --num-samples 24576 >"$file" 2>"$out/amp_batches.err" || echo "FAILED: eager" >>"$file"
  HEADER=0 TRAIND_FLAGS="--device-resident --cuda-graph" BATCHES=${AMP_BATCHES:-128 256 512} \
    bench/amp_batches.sh vgg16 --dataset fake --image-size 32 --num-samples 24576 >>"$file" \
    2>>"$out/amp_batches.err" || echo "FAILED: --cuda-graph" >>"$file"
  cat "$file"
fi
if has bn-probe; then
  "$python" bench/reference/batch_norm_probe.py >"$out/batch_norm_probe.txt" 2>&1
  cat "$out/batch_norm_probe.txt"
fi
if has cpu-conv; then
  # Small sample counts: a few steps per epoch, so that each run takes seconds on 16 cores.
  ROUNDS=${CPU_ROUNDS:-3} EPOCHS=${CPU_EPOCHS:-2} conv_table cpu "$out/conv_cpu.md" \
    "vgg16 --dataset fake --image-size 32 --num-samples 512 --batch-size 128" \
    "resnet18 --dataset fake --image-size 224 --num-samples 256 --batch-size 64"
fi
