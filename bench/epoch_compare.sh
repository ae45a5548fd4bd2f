#!/usr/bin/env bash
# Side by side: epoch time of a traind job and of the plain PyTorch reference loop
# (bench/reference/train_reference.py) for one model and data setup, in fp32 and with bf16
# autocast, alternating within each round so machine noise hits all sides alike; medians of the
# rounds. Same model topology, data, batch size, Adam (lr 1e-3), epochs, seed and torch.
#
#   DEVICE=cuda bench/epoch_compare.sh MODEL [FLAGS...]
#   DEVICE=cuda bench/epoch_compare.sh vgg16 --dataset fake --image-size 224 --num-samples 2048 --batch-size 64
#   DEVICE=cpu AMPS=fp32 ROUNDS=1 bench/epoch_compare.sh resnet18 --dataset fake --image-size 224 --num-samples 256 --batch-size 64
#
# FLAGS go to both sides as written: they are `trainctl submit` flags, and the reference takes the
# same names (--dataset fake|fashion-mnist, --image-size, --num-samples, --channels, --classes,
# --batch-size, --lr, --seed, --limit-train, --cifar-stem, --threads).
# Environment:
#   DEVICE       cpu (default) or cuda
#   ROUNDS       rounds, default 3
#   EPOCHS       epochs per run, default 2. With 2 or more the time is the mean of epochs 2..N: the
#                first epoch pays one-time costs on both sides (CUDA context and kernel loading,
#                cuDNN autotuning, the caching allocator's first allocations). EPOCHS=1: epoch 1.
#   AMPS         precisions, default "fp32 bf16" on cuda, "fp32" elsewhere. fp32 is LibTorch's and
#                PyTorch's default (on CUDA: TF32 convolutions, fp32 matrix products); fp32-strict
#                adds --tf32 off (no TF32 anywhere), tf32 adds --tf32 on; bf16 and fp16 autocast.
#                Speedups are over fp32, and over fp32-strict too when it was run.
#   TRAIND_FLAGS traind-only flags, default on cuda "--device-resident"
#   REF_FLAGS    reference-only flags, default "--loader tensor" (batches gathered by index from
#                tensors on the host, copied per batch: the plain loop without a DataLoader)
#   TUNED_FLAGS  a third side: the reference with these flags; default on cuda
#                "--cudnn-benchmark --channels-last --fused-adam --device-resident" (what traind
#                does on CUDA, done in Python); "" leaves it out
#   THREADS      intra-op threads for both sides (default: each side's default)
#   HEADER=0     print rows only (to put several setups in one table); RAW=FILE appends every run
# Needs build/bin (BUILD_DIR=build-cuda on the CUDA host) and Python PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2; }
source bench/lib.sh
model=$1; shift
flags=("$@")
device=${DEVICE:-cpu}
rounds=${ROUNDS:-3}
epochs=${EPOCHS:-2}
if [ "$device" = cpu ]; then default_amps=fp32; default_traind=""; default_tuned=""
else default_amps="fp32 bf16"; default_traind="--device-resident"
  default_tuned="--cudnn-benchmark --channels-last --fused-adam --device-resident"; fi
read -r -a amps <<<"${AMPS-$default_amps}"
read -r -a traind_flags <<<"${TRAIND_FLAGS-$default_traind}"
read -r -a ref_flags <<<"${REF_FLAGS---loader tensor}"
read -r -a tuned_flags <<<"${TUNED_FLAGS-$default_tuned}"
thread_flag=(); [ -n "${THREADS:-}" ] && thread_flag=(--threads "$THREADS")
raw=${RAW:-/dev/null}

state=$(mktemp -d /tmp/traind-bench.XXXXXX)
trap 'stop_traind "$state/daemon"; rm -rf "$state"' EXIT
if [ -z "${TRAINCTL_ADDR:-}" ]; then
  start_traind "$state/daemon"
  export TRAINCTL_ADDR=unix:$state/daemon/traind.sock
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "—"; else printf "%.2fx", a / b }'; }
secs() { awk -v a="$1" 'BEGIN { if (a == "") print "—"; else printf "%.3f", a }'; }

# The flags, on both sides, that select a precision.
precision_flags() {
  case $1 in
    fp32) ;;
    fp32-strict) echo "--tf32 off" ;;
    tf32) echo "--tf32 on" ;;
    *) echo "--amp $1" ;;
  esac
}

run_traind() {  # amp -> seconds per epoch on stdout
  local amp_flag=(); read -r -a amp_flag <<<"$(precision_flags "$1")"
  local id times
  id=$("$bin/trainctl" submit --model "$model" --device "$device" --epochs "$epochs" \
       "${flags[@]}" "${traind_flags[@]}" "${thread_flag[@]}" "${amp_flag[@]}")
  times=$(job_epoch_times "$id")
  if [ ! -f "$state/logged" ]; then  # what the worker set up (cuDNN, TF32, memory format), once
    "$bin/trainctl" logs "$id" 2>/dev/null | grep -iE 'cudnn|tf32' >&2 || true; touch "$state/logged"
  fi
  if [ "$times" = "[]" ]; then echo "traind job $id failed: $("$bin/trainctl" show "$id")" >&2; return 1; fi
  echo "traind $model $device $1 $times" >>"$raw"; echo "traind $1 $times" >&2
  steady "$times"
}

run_ref() {  # amp, extra flags... -> seconds per epoch on stdout
  local amp=$1; shift
  local amp_flag=(); read -r -a amp_flag <<<"$(precision_flags "$amp")"
  local out times
  out=$("$python" bench/reference/train_reference.py --model "$model" --device "$device" \
        --epochs "$epochs" "${flags[@]}" "${thread_flag[@]}" "${amp_flag[@]}" "$@" | tail -1)
  times=$("$python" -c 'import json,sys; print(json.dumps(json.loads(sys.stdin.read())["epoch_seconds_no_eval"]))' <<<"$out")
  echo "reference $model $device $amp $* $out" >>"$raw"; echo "reference $amp $* $times" >&2
  if [ ! -f "$state/ref_info" ]; then echo "$out" >"$state/ref_info"; fi
  steady "$times"
}

for amp in "${amps[@]}"; do : >"$state/ours_$amp"; : >"$state/ref_$amp"; : >"$state/tuned_$amp"; done
for _ in $(seq 1 "$rounds"); do
  for amp in "${amps[@]}"; do
    run_traind "$amp" >>"$state/ours_$amp"
    run_ref "$amp" "${ref_flags[@]}" >>"$state/ref_$amp"
    if [ ${#tuned_flags[@]} -gt 0 ]; then run_ref "$amp" "${tuned_flags[@]}" >>"$state/tuned_$amp"; fi
  done
done

setup=$(printf '%s ' "${flags[@]}" | sed 's/ $//')
info=$(cat "$state/ref_info")
steps=$("$python" -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["batches_per_epoch"], d["train_images"], d["torch"])' "$info")
read -r batches images torch_version <<<"$steps"
echo "model $model ($setup): $images training images, $batches steps per epoch, torch $torch_version, $rounds rounds, epochs $epochs" >&2
if [ "${HEADER:-1}" != 0 ]; then
  echo "| model | setup | steps/epoch | device | precision | traind s/epoch | reference s/epoch | tuned reference s/epoch | traind speedup vs reference | vs tuned reference | traind speedup over traind fp32 | reference over reference fp32 | tuned over tuned fp32 | traind over traind fp32-strict |"
  echo "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
fi
fp32_ours=""; fp32_ref=""; fp32_tuned=""; strict_ours=""
if [ -f "$state/ours_fp32" ]; then
  fp32_ours=$(median <"$state/ours_fp32"); fp32_ref=$(median <"$state/ref_fp32"); fp32_tuned=$(median <"$state/tuned_fp32")
fi
[ -f "$state/ours_fp32-strict" ] && strict_ours=$(median <"$state/ours_fp32-strict")
for amp in "${amps[@]}"; do
  ours=$(median <"$state/ours_$amp"); ref=$(median <"$state/ref_$amp"); tuned=$(median <"$state/tuned_$amp")
  if [ "$amp" = fp32 ]; then amp_ours="—"; amp_ref="—"; amp_tuned="—"
  else amp_ours=$(ratio "$fp32_ours" "$ours"); amp_ref=$(ratio "$fp32_ref" "$ref"); amp_tuned=$(ratio "$fp32_tuned" "$tuned"); fi
  over_strict="—"; [ "$amp" != fp32-strict ] && over_strict=$(ratio "$strict_ours" "$ours")
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$model" "$setup" "$batches" \
    "$device" "$amp" "$(secs "$ours")" "$(secs "$ref")" "$(secs "$tuned")" "$(ratio "$ref" "$ours")" \
    "$(ratio "$tuned" "$ours")" "$amp_ours" "$amp_ref" "$amp_tuned" "$over_strict"
done
