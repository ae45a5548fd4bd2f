#!/usr/bin/env bash
# Warm workers: how long a small job takes from submit to its end (as `trainctl submit --watch`
# waits) with a worker kept started (--warm-workers 1, the default) and without (0), side by side:
# two daemons, alternating job by job, the next job submitted a few seconds after the last ended
# so the warm daemon has had time to start its next worker (as between a user's submissions).
#   bench/warm_worker.sh [ROUNDS]   (default 5; BUILD_DIR, PYTHON as in bench/lib.sh)
# Prints the medians and their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
rounds=${1:-5}
state=$(mktemp -d /tmp/traind-warm.XXXXXX)
trap 'stop_traind "$state/warm"; stop_traind "$state/cold"; rm -rf "$state"' EXIT
start_traind "$state/warm"
"$bin/traind" --state-dir "$state/cold" --warm-workers 0 >"$state/cold.log" 2>&1 &
mkdir -p "$state/cold" && echo $! >"$state/cold/pid"
for _ in $(seq 1 100); do
  "$bin/trainctl" --addr "unix:$state/cold/traind.sock" devices >/dev/null 2>&1 && break
  sleep 0.2
done

job=(submit --model mlp --dataset fake --num-samples 256 --image-size 8 --channels 1
     --batch-size 64 --device cpu --threads 1 --watch)
seconds() {  # ADDR: submit-to-end wall seconds of one job
  local start end
  start=$(date +%s.%N)
  "$bin/trainctl" --addr "$1" "${job[@]}" >/dev/null
  end=$(date +%s.%N)
  "$python" -c "print($end - $start)"
}
warm=() cold=()
for r in $(seq 1 "$rounds"); do
  sleep 3
  warm+=("$(seconds "unix:$state/warm/traind.sock")")
  sleep 3
  cold+=("$(seconds "unix:$state/cold/traind.sock")")
  echo "round $r: warm ${warm[-1]} s, cold ${cold[-1]} s" >&2
done
w=$(printf '%s\n' "${warm[@]}" | median)
c=$(printf '%s\n' "${cold[@]}" | median)
echo "| job | submit to end, warm worker (median of $rounds) | without | ratio |"
echo "|---|---|---|---|"
"$python" -c "print(f'| mlp, 256 fake 8x8 images, 1 epoch, cpu | {$w:.2f} s | {$c:.2f} s | {$c/$w:.2f}x |')"
