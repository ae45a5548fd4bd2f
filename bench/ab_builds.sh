#!/usr/bin/env bash
# A/B of two builds of traind (two commits) in one run: the same job through each build's own
# warm traind, alternating A, B in every round so machine noise hits both alike. Per build:
# seconds per epoch without evaluation (the mean of epochs 2..N) and submit-to-first-step (the
# first step event's time from the submit call); medians [min-max] and the ratio B/A (below 1: B
# is faster).
#   bench/ab_builds.sh BUILD_A BUILD_B ROUNDS SUBMIT_FLAGS...
#   bench/ab_builds.sh build-old build 3 --model lenet5 --dataset fashion-mnist --device cpu --epochs 3
# BUILD_A, BUILD_B: build directories (their bin/traind, bin/trainctl, bin/traind-worker).
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 4 ] || { sed -n 2,9p "$0"; exit 2; }
a=$1 b=$2 rounds=$3
shift 3
flags=("$@")
source bench/lib.sh
state=$(mktemp -d /tmp/traind-ab.XXXXXX)
trap 'for side in a b; do stop_traind "$state/$side"; done; rm -rf "$state"' EXIT
for side in a b; do
  dir=$a; [ $side = b ] && dir=$b
  bin=$PWD/$dir/bin start_traind "$state/$side" || exit 1
done
# first_step_seconds ID START: the job's first step event, in seconds after START (epoch seconds).
first_step_seconds() {
  "$2" logs "$1" --output json | "$python" -c '
import datetime, json, sys
start = float(sys.argv[1])
for line in sys.stdin:
    e = json.loads(line)
    if "step" in e and "time" in e:
        head, _, frac = e["time"].rstrip("Z").partition(".")
        t = datetime.datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
        print("%.3f" % (t.timestamp() + float("0." + (frac or "0")) - start))
        break
' "$3"
}
echo "# $(date -u +%F) $(nproc) cores; A=$a B=$b; ${flags[*]}"
for round in $(seq 1 "$rounds"); do
  for side in a b; do
    dir=$a; [ $side = b ] && dir=$b
    trainctl=$PWD/$dir/bin/trainctl
    export TRAINCTL_ADDR=unix:$state/$side/traind.sock
    sleep 2  # the warm worker is back
    start=$(date +%s.%N)
    id=$("$trainctl" submit "${flags[@]}") || { echo "submit failed on $side"; exit 1; }
    times=$(bin=$PWD/$dir/bin job_epoch_times "$id")
    [ "$times" != "[]" ] || { echo "job $id failed on $side"; exit 1; }
    steady "$times" >>"$state/$side.epoch"
    first_step_seconds "$id" "$trainctl" "$start" >>"$state/$side.first"
    echo "round $round $side: epochs $times, first step $(tail -1 "$state/$side.first") s"
  done
done
ratio() { awk -v a="$(median <"$1")" -v b="$(median <"$2")" 'BEGIN { printf "%.3f", b / a }'; }
echo "| measure | A ($a) | B ($b) | B/A |"
echo "|---|---|---|---|"
echo "| s/epoch | $(median_range <"$state/a.epoch") | $(median_range <"$state/b.epoch") | $(ratio "$state/a.epoch" "$state/b.epoch") |"
echo "| submit to first step, s | $(median_range <"$state/a.first") | $(median_range <"$state/b.first") | $(ratio "$state/a.first" "$state/b.first") |"
