#!/usr/bin/env bash
# Kernel-level profiles of both sides of bench/compile_compare.sh (issue 36): where a traind job
# and the torch.compile reference spend their device time, kernel by kernel, over the same steps
# (5 training steps: from the second on traind's side, through Kineto; from the tenth on the
# reference's, through torch.profiler, once reduce-overhead has recorded its CUDA graphs). For each precision in AMPS: traind's `trainctl show` profile (top operators and
# kernels, ms per step) and then the compiled reference's (operators and kernels, ms per step).
#
#   bench/compile_profile.sh MODEL [FLAGS...]
#   BUILD_DIR=build-cuda bench/compile_profile.sh vgg16 --dataset fake --image-size 32 --num-samples 2560 --batch-size 128
#
# FLAGS go to both sides, as in compile_compare.sh; give the reference at least 10 + STEPS steps in
# its one epoch (--num-samples over --batch-size). Environment: DEVICE (cuda), AMPS ("fp32 bf16"),
# MODE (reduce-overhead), STEPS (5), TRAIND_FLAGS and REF_FLAGS as in compile_compare.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2; }
source bench/lib.sh
model=$1; shift
flags=("$@")
device=${DEVICE:-cuda}
mode=${MODE:-reduce-overhead}
steps=${STEPS:-5}
read -r -a amps <<<"${AMPS-fp32 bf16}"
read -r -a traind_flags <<<"${TRAIND_FLAGS---device-resident}"
read -r -a ref_flags <<<"${REF_FLAGS---cudnn-benchmark --channels-last --fused-adam --device-resident}"

state=$(mktemp -d /tmp/traind-profile.XXXXXX)
trap 'stop_traind "$state/daemon"; rm -rf "$state"' EXIT
start_traind "$state/daemon"
export TRAINCTL_ADDR=unix:$state/daemon/traind.sock

for amp in "${amps[@]}"; do
  amp_flags=()
  [ "$amp" = fp32 ] || amp_flags=(--amp "$amp")
  echo "== traind $model $amp (${flags[*]} ${traind_flags[*]})"
  id=$("$bin/trainctl" submit --model "$model" --device "$device" --epochs 1 --profile-steps "$steps" \
       "${flags[@]}" "${traind_flags[@]}" "${amp_flags[@]}")
  "$bin/trainctl" watch "$id" >/dev/null 2>&1 || true
  "$bin/trainctl" show "$id" | sed -n '/profile /,$p' | grep -v '^  \(disk\|artifact\)' ||
    echo "(no profile: $("$bin/trainctl" show "$id" | head -1))"
  echo "== torch.compile($mode) $model $amp (${flags[*]} ${ref_flags[*]})"
  "$python" bench/reference/train_reference.py --model "$model" --device "$device" --epochs 1 \
    "${flags[@]}" "${ref_flags[@]}" "${amp_flags[@]}" --compile "$mode" --profile-steps "$steps" \
    --profile-from 10 |
    grep -v '^Epoch\|^{' || echo "(the reference failed or ended before step $((10 + steps)))"
done
