#!/usr/bin/env bash
# The same LeNet5 trained as traind's built-in model and as a TorchScript module (bench/reference's
# definition, scripted by PyTorch), side by side on one daemon, rounds interleaved: seconds per
# epoch (steady: epochs 2..N), the ratio TorchScript / built-in, and both test accuracies. Both
# start from the same weights (the scripted module's, as a state dict: --init-from-file) and see
# the same batches, so their accuracies should agree to float rounding.
#   bench/torchscript_lenet5.sh      DEVICE=cpu ROUNDS=3 EPOCHS=3 FLAGS="--limit-train 20000"
set -euo pipefail
cd "$(dirname "$0")/.." && source bench/lib.sh
device=${DEVICE:-cpu}
rounds=${ROUNDS:-3}
epochs=${EPOCHS:-3}
work=$(mktemp -d /tmp/traind-ts-bench.XXXXXX)
trap 'stop_traind "$work/d"; rm -rf "$work"' EXIT
export TRAINCTL_ADDR="unix:$work/d/traind.sock"
"$python" -c "import sys, torch; sys.path.insert(0, 'bench/reference'); import train_reference as r
model = r.LeNet5(); torch.jit.save(torch.jit.script(model), '$work/lenet5.pt')
torch.save(dict(model.state_dict()), '$work/init.pt')"
start_traind "$work/d"
# shellcheck disable=SC2086
run() {  # prints "seconds accuracy"
  local id times
  id=$("$bin/trainctl" submit "$@" --dataset fashion-mnist --epochs "$epochs" --device "$device" \
    --init-from-file "$work/init.pt" ${FLAGS:-} 2>/dev/null)
  times=$(job_epoch_times "$id")
  [ "$times" != "[]" ] || { echo "job $id failed: $("$bin/trainctl" show "$id" | grep -i error)" >&2; return 1; }
  echo "$(steady "$times") $("$bin/trainctl" show "$id" --output json | "$python" -c 'import json,sys; print(json.load(sys.stdin)["result"]["testAccuracy"])')"
}
echo "device=$device epochs=$epochs flags=${FLAGS:-} ($(date -u +%F))"
for round in $(seq 1 "$rounds"); do
  read -r builtin builtin_acc < <(run --model lenet5)
  read -r script script_acc < <(run --model-file "$work/lenet5.pt" --image-size 32)
  "$python" -c "print(f'round $round: built-in {$builtin:.3f} s/epoch (test {$builtin_acc*100:.2f}%), TorchScript {$script:.3f} s/epoch (test {$script_acc*100:.2f}%): {$script/$builtin:.2f}x')"
done
