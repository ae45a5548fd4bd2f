#!/usr/bin/env bash
# On the CUDA host (see ../shared/GPU.md), in as many device commands as it takes: builds traind
# (incrementally while the machine stays warm), then runs the parts of bench/pack_trials.py named in
# PARTS within BUDGET_S seconds of this command, writing into OUT. A part cut short by the budget
# still writes the rounds it finished (SIGINT lets pack_trials.py save them).
#   OUT=/tmp/out PARTS="pairs:1:1 large" bash bench/pack_trials_gpu.sh
# Parts: probe (one LeNet5 job: what its last step report says of the GPU, and its log's word on
# it), pairs:FIRST_SEED:SEEDS (the 24-trial LeNet5 search packed and one at a time, per seed),
# large (a ResNet-18 batch-256 search on random CIFAR-10-shaped files), large224 (the same on
# random 224 px images: fills the GPU, must not pack), mlp:FIRST_SEED:SEEDS (pairs of MLP),
# cpu:MODEL:SEEDS (a 12-trial 1-epoch search on the host's CPU, packed and one at a time),
# Each part may start with nomps- (traind --mps off: packed trials take turns on the GPU; its files
# are named nomps-*) or ctx- (TRAIND_PACKED_PREPARE=context: the workers waiting for packed trials
# create their CUDA context ahead, with no rehearsed step; files named ctx-*) or step- (=step: the
# context and a rehearsed training step; files named step-*) or deep- (TRAIND_PACKED_POOL_DEPTH=2:
# twice as many workers wait for packed trials; files named deep-*) or spawn- (TRAIND_WORKER_FORK=0:
# every worker starts as a program, none is forked; files named spawn-*) or fresh- (TRAIND_WORKER_
# REUSE=0: each packed trial's worker exits after it, none serves the next; files named fresh-*). Prefixes combine (deep-step-mlp:1:2). nvidia-cuda-mps-control is looked for on PATH and in /usr/local/nvidia/bin.
# PACK_FLAGS adds flags to every pack_trials.py run (e.g. --alone-twice). KEEP_LOGS=1 keeps each
# part's traind log too (OUT/TAGtraind-PART.log; the device tool brings back at most 8 files).
# Afterwards: bench/pack_trials.py - --combine OUT1/pairs-*.json OUT2/pairs-*.json
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-pack-results}
mkdir -p "$out"
deadline=$((SECONDS + ${BUDGET_S:-570}))
left() { echo $((deadline - SECONDS)); }

# Every time: a warm machine's build-cuda/ is only brought up to date.
if true; then
  bash .gpu/host-build.sh -DTRAIND_WEB_MODULES="$PWD/.gpu/web_modules" -DTRAIND_BUILD_TESTS=OFF \
    >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
  echo "built in $SECONDS s"
  rm "$out/build.log"  # the device tool brings back at most 8 files: the parts' results first
fi
export LD_LIBRARY_PATH=/tmp/sys/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export FASHION_MNIST_DIR=$PWD/.gpu/data
{ date -u; git log -1 --format=%h 2>/dev/null; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; } >"$out/machine.txt"
cat "$out/machine.txt"

cifar=/tmp/cifar-random
if [ ! -f "$cifar/test_batch.bin" ]; then
  python3 - "$cifar" <<'EOF'
import os, sys, numpy
directory = sys.argv[1]
os.makedirs(directory, exist_ok=True)
rng = numpy.random.default_rng(0)
for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
    records = rng.integers(0, 256, size=(10000, 3073), dtype=numpy.uint8)
    records[:, 0] %= 10  # the label byte
    records.tofile(os.path.join(directory, name))
EOF
fi

export PATH=$PATH:/usr/local/nvidia/bin
for part in ${PARTS:-pairs:1:3 large}; do
  tag="" flags=()
  unset TRAIND_PACKED_PREPARE TRAIND_PACKED_POOL_DEPTH TRAIND_WORKER_FORK TRAIND_WORKER_REUSE
  while [[ $part =~ ^(nomps|ctx|step|deep|spawn|fresh)- ]]; do  # prefixes combine: deep-step-mlp:1:2
    prefix=${BASH_REMATCH[1]} part=${part#*-} tag=$tag${BASH_REMATCH[1]}-
    case $prefix in
      nomps) flags=(--traind-flags=--mps=off) ;;
      ctx) export TRAIND_PACKED_PREPARE=context ;;
      step) export TRAIND_PACKED_PREPARE=step ;;
      deep) export TRAIND_PACKED_POOL_DEPTH=2 ;;
      spawn) export TRAIND_WORKER_FORK=0 ;;
      fresh) export TRAIND_WORKER_REUSE=0 ;;
    esac
  done
  [ "$(left)" -gt 20 ] || { echo "no time left for $part"; break; }
  case $part in
    probe)
      state=$(mktemp -d /tmp/pack-trials.XXXXXX)
      build-cuda/bin/traind --state-dir "$state/state" >"$state/traind.log" 2>&1 &
      export TRAINCTL_ADDR=unix:$state/state/traind.sock
      while [ ! -S "$state/state/traind.sock" ]; do sleep 0.1; done
      job=$(build-cuda/bin/trainctl submit --model lenet5 --dataset fashion-mnist --device cuda --epochs 1)
      build-cuda/bin/trainctl wait "$job"
      build-cuda/bin/trainctl show "$job" --output json | python3 -c 'import json, sys
step = json.load(sys.stdin).get("latestStep", {})
print({k: v for k, v in step.items() if k.startswith("device") or k in ("epoch", "batch")})'
      build-cuda/bin/trainctl logs "$job" | grep -i "busy\|nvml\|start-up" | head -5
      build-cuda/bin/trainctl shutdown >/dev/null 2>&1
      wait ;;
    pairs:*)
      IFS=: read -r _ first seeds <<<"$part"
      timeout -s INT "$(left)" python3 bench/pack_trials.py build-cuda/bin --trials 24 \
        --first-seed "$first" --seeds "$seeds" --epochs 2 --out "$out/${tag}pairs-$first.json" "${flags[@]}" ${PACK_FLAGS:-} ;;
    cpu:*)
      IFS=: read -r _ model seeds <<<"$part"
      timeout -s INT "$(left)" python3 bench/pack_trials.py build-cuda/bin --device cpu --trials 12 \
        --model "$model" --seeds "$seeds" --epochs 1 --out "$out/${tag}cpu-$model.json" "${flags[@]}" ${PACK_FLAGS:-} ;;
    large)
      timeout -s INT "$(left)" python3 bench/pack_trials.py build-cuda/bin --trials 24 --seeds 0 \
        --large "$cifar" --large-first --out "$out/${tag}large.json" "${flags[@]}" ${PACK_FLAGS:-} ;;
    large224)
      timeout -s INT "$(left)" python3 bench/pack_trials.py build-cuda/bin --trials 24 --seeds 0 \
        --large fake224 --large-first --out "$out/${tag}large224.json" "${flags[@]}" ${PACK_FLAGS:-} ;;
    mlp:*)
      IFS=: read -r _ first seeds <<<"$part"
      timeout -s INT "$(left)" python3 bench/pack_trials.py build-cuda/bin --trials 24 --model mlp \
        --first-seed "$first" --seeds "$seeds" --epochs 2 --out "$out/${tag}mlp-$first.json" "${flags[@]}" ${PACK_FLAGS:-} ;;
  esac
  for state in /tmp/pack-trials.*; do
    # Whether workers were forked (supervise/fork_server.h) or fell back to starting as programs.
    [ -f "$state/traind.log" ] && grep -h "fork server\|start as programs" "$state/traind.log" | sort | uniq -c | head -3
    [ -f "$state/traind.log" ] && [ -n "${KEEP_LOGS:-}" ] &&
      cp "$state/traind.log" "$out/${tag}traind-${part//:/-}.log"
    rm -rf "$state"
  done
done
