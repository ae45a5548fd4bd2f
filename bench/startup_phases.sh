#!/usr/bin/env bash
# Where the time between `trainctl submit` and SUCCEEDED goes (issue 17): runs one job several
# times through a warm daemon and prints each job's events on one time line, in seconds from the
# submit call, so each phase (worker hand-over, device context, dataset, model, first step,
# training, final evaluation, the daemon's bookkeeping) can be read off.
#   BUILD_DIR=build-cuda [TRAIND_ENV="VAR=VALUE ..."] bench/startup_phases.sh [ROUNDS] [JOB FLAGS...]
#   default job: LeNet5, Fashion-MNIST, cuda:0, 6 epochs, batch 256, lr 3e-3, onecycle (issue
#   17's recipe; device-resident data and the CUDA graph are on by default there)
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
rounds=${1:-3}
shift || true
flags=("$@")
[ ${#flags[@]} -eq 0 ] && flags=(--model lenet5 --dataset fashion-mnist --device cuda:0 --epochs 6
  --batch-size 256 --lr 3e-3 --lr-schedule onecycle)
state=$(mktemp -d /tmp/traind-phases.XXXXXX)
trap 'stop_traind "$state"; rm -rf "$state"' EXIT
# shellcheck disable=SC2086
start_traind "$state" ${TRAIND_ENV:-} || exit 1  # TRAIND_ENV="VAR=VALUE ...": traind's environment
export TRAINCTL_ADDR=unix:$state/traind.sock
echo "# $(date -u +%F) $(nproc) cores; ${flags[*]}"
for round in $(seq 1 "$rounds"); do
  sleep 3  # the warm worker is back
  start=$(date +%s.%N)
  id=$("$bin/trainctl" submit "${flags[@]}") || { echo "submit failed"; continue; }
  "$bin/trainctl" watch "$id" >/dev/null 2>&1
  end=$(date +%s.%N)
  echo "## round $round (job $id): submit -> watch returned $(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.3f", b-a}') s"
  "$bin/trainctl" logs "$id" --output json | "$python" -c '
import datetime, json, sys
start = float(sys.argv[1])
def seconds(text):
    # RFC 3339 with nanoseconds: datetime takes microseconds only.
    head, _, frac = text.rstrip("Z").partition(".")
    t = datetime.datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return t.timestamp() + float("0." + (frac or "0"))
steps = 0
for line in sys.stdin:
    e = json.loads(line)
    if "time" not in e: continue
    at = seconds(e["time"]) - start
    if "stateChange" in e:
        what = "state " + e["stateChange"].get("state", "?")
    elif "log" in e:
        what = "log: " + e["log"].get("text", "")[:240]
    elif "step" in e:
        steps += 1
        if steps > 1: continue
        what = "first step event"
    elif "epochSummary" in e:
        what = "epoch %s done" % e["epochSummary"].get("epoch", "?")
    elif "finalResult" in e:
        what = "final result"
    else:
        what = ",".join(k for k in e if k not in ("seq", "time"))
    print("%8.3f  %s" % (at, what))
' "$start"
done
