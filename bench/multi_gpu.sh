#!/usr/bin/env bash
# Data parallel on several GPUs (issue 15), on a host with two or more: traind's `--gpus 1,2`
# sweeps reported with `--baseline gpus=1`, and PyTorch's DistributedDataParallel under torchrun
# (bench/reference/ddp_reference.py) on the same models, data and per-GPU batches, in one run.
#   bash .gpu/host-build.sh && BUILD_DIR=build-cuda bench/multi_gpu.sh
#   PARTS="lenet5" ROUNDS=3 BUILD_DIR=build-cuda bench/multi_gpu.sh
# Parts: lenet5 (LeNet5 on Fashion-MNIST, same global batch on one and two GPUs: test accuracy),
# resnet18 (fake, 224 px, batch 256 per GPU, fp32 and bf16), vgg16 (fake, 32 px, batch 128 per
# GPU, fp32 and bf16). Samples/s on both sides: images of an epoch / the mean of epochs 2..EPOCHS
# (the first pays one-time costs; `trainctl report` counts it), median of ROUNDS.
# Writes into OUT (default ./multi-gpu-results).
set -uo pipefail
cd "$(dirname "$0")/.."
export BUILD_DIR=${BUILD_DIR:-build-cuda}
source bench/lib.sh
out=${OUT:-multi-gpu-results}; mkdir -p "$out"
parts=" ${PARTS:-lenet5 resnet18 vgg16} "
rounds=${ROUNDS:-3}
epochs=${EPOCHS:-3}
has() { [[ "$parts" == *" $1 "* ]]; }
state=$(mktemp -d /tmp/traind-multi-gpu.XXXXXX)
trap 'stop_traind "$state"; cp "$state/log" "$out/traind.log"; rm -rf "$state"' EXIT
start_traind "$state" || exit 1
export TRAINCTL_ADDR=unix:$state/traind.sock
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader;
  nvidia-smi topo -m; nproc; git rev-parse --short HEAD; } >"$out/machine.txt" 2>&1
"$bin/trainctl" devices >>"$out/machine.txt"

if has lenet5; then
  # The same global batch (256) on one GPU and on two (128 each); the same seed and epochs.
  common=(--model lenet5 --dataset fashion-mnist --epochs 5 --lr 2e-3 --eval-every 5)
  ids=()
  for seed in 1 2 3; do
    ids+=("$("$bin/trainctl" submit "${common[@]}" --seed $seed --gpus 1 --batch-size 256)")
    ids+=("$("$bin/trainctl" submit "${common[@]}" --seed $seed --gpus 2 --batch-size 128)")
    ids+=("$("$bin/trainctl" submit "${common[@]}" --seed $seed --gpus 2 --batch-size 128 \
             --gradient-allreduce bf16)")
  done
  "$bin/trainctl" watch "${ids[1]}" >"$out/lenet5_2gpu_watch.txt" 2>&1
  for id in "${ids[@]}"; do
    "$bin/trainctl" watch "$id" >/dev/null 2>&1
    { echo "== job $id"; "$bin/trainctl" logs "$id" 2>&1; } >>"$out/lenet5_logs.txt"
    "$bin/trainctl" show "$id" --output json | tr -d '\n' >>"$out/lenet5_jobs.jsonl"; echo >>"$out/lenet5_jobs.jsonl"
  done
  "$bin/trainctl" list >"$out/lenet5_list.txt"
  "$python" - "$out/lenet5_jobs.jsonl" <<'PY' | tee "$out/lenet5.md"
import json, sys
jobs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| GPUs | batch per GPU | global batch | gradients | seed | state | test accuracy | epoch seconds |")
print("|---|---|---|---|---|---|---|---|")
for job in jobs:
    r, spec = job.get("result", {}), job["spec"]
    gpus = int(spec.get("gpus") or 1)
    print(f"| {gpus} | {spec['batchSize']} | {spec['batchSize'] * gpus} | "
          f"{spec.get('gradientAllreduce') or 'fp32'} | {spec.get('seed')} | {job['state']} | "
          f"{r.get('testAccuracy', 0) * 100:.2f}% | "
          f"{', '.join('%.2f' % s for s in r.get('epochSecondsNoEval', []))} |")
PY
fi

# setup NAME BASE FLAGS...: traind's sweep over gpus 1,2 and amp fp32,bf16 (ROUNDS repeats, one
# report; BASE: the sweep file's base, YAML flow style), then DDP on the same setup (FLAGS), 1 and
# 2 GPUs, fp32 and bf16, ROUNDS times.
setup() {
  local name=$1 base=$2; shift 2
  local sweep
  cat >"$out/${name}_sweep.yaml" <<YAML
name: $name
base: {$base, epochs: $epochs, eval_every: $epochs, device_resident: true}
grid: {gpus: [1, 2], amp: [fp32, bf16]}
repeat: $rounds
YAML
  # With BF16_GRADS=1: also two GPUs whose gradients travel as bf16 (on both sides).
  [ "${BF16_GRADS:-0}" = 1 ] && cat >"$out/${name}_bf16_grads.yaml" <<YAML
name: $name-bf16-grads
base: {$base, epochs: $epochs, eval_every: $epochs, device_resident: true, gpus: 2, gradient_allreduce: bf16}
grid: {amp: [fp32, bf16]}
repeat: $rounds
YAML
  sweep=$("$bin/trainctl" sweep "$out/${name}_sweep.yaml")
  "$bin/trainctl" watch --sweep "$sweep" >"$out/${name}_watch.txt" 2>&1
  "$bin/trainctl" report "$sweep" --baseline gpus=1 | tee "$out/${name}_report.txt"
  "$bin/trainctl" report "$sweep" --baseline gpus=1 --format json >"$out/${name}_report.json"
  local grad_sweep=""
  if [ -f "$out/${name}_bf16_grads.yaml" ]; then
    grad_sweep=$("$bin/trainctl" sweep "$out/${name}_bf16_grads.yaml")
    "$bin/trainctl" watch --sweep "$grad_sweep" >/dev/null 2>&1
    "$bin/trainctl" report "$grad_sweep" --format json >"$out/${name}_bf16_grads_report.json"
  fi
  : >"$out/${name}_ddp.jsonl"
  for round in $(seq 1 "$rounds"); do
    for amp in fp32 bf16; do
      for gpus in 1 2; do
        "$python" -m torch.distributed.run --standalone --nproc_per_node "$gpus" \
          bench/reference/ddp_reference.py "$@" \
          --epochs "$epochs" --amp "$amp" 2>>"$out/${name}_ddp.err" | grep '^{' >>"$out/${name}_ddp.jsonl"
      done
      if [ -n "$grad_sweep" ]; then
        "$python" -m torch.distributed.run --standalone --nproc_per_node 2 \
          bench/reference/ddp_reference.py "$@" --gradient-allreduce bf16 \
          --epochs "$epochs" --amp "$amp" 2>>"$out/${name}_ddp.err" | grep '^{' >>"$out/${name}_ddp.jsonl"
      fi
    done
  done
  "$python" -c 'import json,sys; [print(i) for f in sys.argv[1:] for r in json.load(open(f))["rows"] for i in r["jobIds"]]' \
    "$out/${name}_report.json" $( [ -n "$grad_sweep" ] && echo "$out/${name}_bf16_grads_report.json") | while read -r id; do
      "$bin/trainctl" show "$id" --output json | tr -d '\n'; echo
    done >"$out/${name}_jobs.jsonl"
  "$python" - "$out/${name}_jobs.jsonl" "$out/${name}_ddp.jsonl" <<'PY' | tee "$out/${name}.md"
import json, statistics, sys
# Steady samples/s on both sides: images of an epoch / the mean of epochs 2..N (the first pays
# one-time costs: cuDNN autotuning, first allocations, NCCL's first collectives).
def steady(seconds):
    rest = seconds[1:] or seconds
    return sum(rest) / len(rest)
ours = {}
for line in open(sys.argv[1]):
    job = json.loads(line)
    spec, result = job["spec"], job.get("result", {})
    if job["state"] != "SUCCEEDED" or not result.get("epochSecondsNoEval"):
        continue
    gpus, amp = int(spec.get("gpus") or 1), spec.get("amp") or "fp32"
    grads = spec.get("gradientAllreduce") or "fp32"
    n = int(spec["numSamples"]); n_train = n - n // 10
    per_step = int(spec["batchSize"]) * gpus
    ours.setdefault((amp, gpus, grads), []).append(
        (n_train // per_step) * per_step / steady(result["epochSecondsNoEval"]))
theirs = {}
for line in open(sys.argv[2]):
    if not line.strip():
        continue
    d = json.loads(line)
    theirs.setdefault((d["amp"], d["world_size"], d.get("gradient_allreduce", "fp32")), []).append(
        d["steps_per_epoch"] * d["batch_size_per_rank"] * d["world_size"] / steady(d["epoch_seconds"]))
def cell(values):
    if not values:
        return 0, "-"
    m = statistics.median(values)
    return m, f"{m:,.0f} ({min(values):,.0f}-{max(values):,.0f}, {len(values)} runs)"
print("| precision | GPUs | gradients | traind samples/s (median, min-max) | DDP samples/s (median, min-max) | traind / DDP | traind vs 1 GPU | DDP vs 1 GPU |")
print("|---|---|---|---|---|---|---|---|")
for amp in ("fp32", "bf16"):
    for gpus, grads in ((1, "fp32"), (2, "fp32"), (2, "bf16")):
        if (amp, gpus, grads) not in ours and (amp, gpus, grads) not in theirs:
            continue
        o, otext = cell(ours.get((amp, gpus, grads), []))
        t, ttext = cell(theirs.get((amp, gpus, grads), []))
        o1, t1 = cell(ours.get((amp, 1, "fp32"), []))[0], cell(theirs.get((amp, 1, "fp32"), []))[0]
        print(f"| {amp} | {gpus} | {grads} | {otext} | {ttext} | {o / t if t else 0:.2f}x | "
              f"{o / o1 if o1 else 0:.2f}x | {t / t1 if t1 else 0:.2f}x |")
PY
}

if has resnet18; then
  n=${RESNET_SAMPLES:-10240}
  setup resnet18 "model: resnet18, dataset: fake, image_size: 224, num_samples: $n, batch_size: 256" \
    --model resnet18 --dataset fake --image-size 224 --num-samples "$n" --batch-size 256
fi
if has vgg16; then
  n=${VGG_SAMPLES:-40960}
  BF16_GRADS=1 setup vgg16 "model: vgg16, dataset: fake, image_size: 32, num_samples: $n, batch_size: 128" \
    --model vgg16 --dataset fake --image-size 32 --num-samples "$n" --batch-size 128
fi
