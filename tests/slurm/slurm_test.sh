#!/usr/bin/env bash
# Jobs on Slurm end to end: a private Slurm on this machine (local_slurm.sh: munged, slurmctld and
# one slurmd, none of them mocked), a real traind that submits to it, and trainctl following the
# jobs. A 2-task LeNet5 job runs through Slurm with its events streamed back to `trainctl watch`;
# `trainctl cancel` of a running one ends the Slurm job CANCELLED; a traind shutdown checkpoints a
# running one, which the next traind resubmits and resumes; bad Slurm fields are refused.
#   tests/slurm/slurm_test.sh BIN_DIR      (ctest runs it; exit 77 = skipped, with the reason)
set -uo pipefail
bin=$(cd "${1:?usage: slurm_test.sh BIN_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/checks.sh
source "$(dirname "$0")/../lib/checks.sh"  # skip, pass, fail, expect
# shellcheck source=local_slurm.sh
source "$src/tests/slurm/local_slurm.sh"

work=$(mktemp -d /tmp/traind-slurm-test.XXXXXX)
traind_pid=""
cleanup() {
  [ -n "$traind_pid" ] && kill "$traind_pid" 2>/dev/null && wait "$traind_pid" 2>/dev/null
  local_slurm_stop "$work/slurm"
  rm -rf "$work"
}
trap cleanup EXIT
[ -x "$bin/traind-slurm" ] && [ -x "$bin/traind-slurm-task" ] || skip "no traind-slurm in $bin"
local_slurm_start "$work/slurm" || skip "$SKIP_REASON"


export XDG_STATE_HOME=$work/state
export PATH=$bin:$PATH
"$bin/traind" --slurm-address 127.0.0.1 >"$work/traind.log" 2>&1 &
traind_pid=$!
for _ in $(seq 100); do
  [ -S "$work/state/traind/traind.sock" ] && break
  kill -0 "$traind_pid" 2>/dev/null || { cat "$work/traind.log"; exit 1; }
  sleep 0.1
done

# The job id: the first line `trainctl submit` prints.
job_id() { head -n 1 "$work/out" | grep -Eo '^[0-9]+$'; }
slurm_id() { trainctl logs "$1" 2>/dev/null | grep -Eo 'Submitted to Slurm as job [0-9]+' | grep -Eo '[0-9]+$'; }

# 1. Two tasks (ranks), data parallel over Gloo, placed by Slurm; the events reach `watch`.
expect 0 "a 2-task LeNet5 job through Slurm succeeds, watched" "test accuracy|accuracy" -- \
  timeout 300 trainctl submit --backend slurm --processes 2 --model lenet5 --dataset fashion-mnist \
  --device cpu --epochs 1 --limit-train 12000 --limit-test 2000 --log-every 20 --watch
first=$(job_id)
expect 0 "its log shows Slurm's job and both ranks' training" "Submitted to Slurm as job [0-9]+" -- \
  trainctl logs "$first"
grep -q "RUNNING" "$work/out" && pass "the log follows the Slurm job's state (RUNNING)" \
  || fail "the log never saw the Slurm job RUNNING"
first_slurm=$(slurm_id "$first")
for _ in $(seq 40); do  # srun and the batch script exit just after the tasks report
  scontrol show job "$first_slurm" --oneliner 2>/dev/null | grep -q "JobState=COMPLETED" && break
  sleep 0.5
done
expect 0 "Slurm says that job COMPLETED" "JobState=COMPLETED" -- \
  scontrol show job "$first_slurm" --oneliner
expect 0 "trainctl show: SUCCEEDED" "SUCCEEDED" -- trainctl show "$first"
expect 0 "the script traind handed sbatch is private to its owner" "^600$" -- \
  stat -c %a "$work/state/traind/jobs/$first/slurm.sbatch"

# 2. Cancel while Slurm runs it: the Slurm job ends CANCELLED, nothing of it is left running.
expect 0 "a long job is submitted to Slurm" "" -- \
  trainctl submit --backend slurm --processes 2 --model lenet5 --dataset fashion-mnist \
  --device cpu --epochs 50 --log-every 20
second=$(job_id)
second_slurm=""
for _ in $(seq 240); do
  if trainctl logs "$second" 2>/dev/null | grep -q "Slurm job [0-9]*: RUNNING"; then
    second_slurm=$(slurm_id "$second"); break
  fi
  sleep 0.5
done
[ -n "$second_slurm" ] && pass "Slurm runs it (job $second_slurm)" || fail "it never ran on Slurm"
for _ in $(seq 240); do  # until the ranks train: a step event
  trainctl logs "$second" 2>/dev/null | grep -qiE "epoch 1|step|loss" && break
  sleep 0.5
done
expect 0 "trainctl cancel" "" -- trainctl cancel "$second"
for _ in $(seq 60); do
  trainctl show "$second" 2>/dev/null | grep -q CANCELLED && break
  sleep 0.5
done
expect 0 "the job ends CANCELLED" "CANCELLED" -- trainctl show "$second"
if [ -n "$second_slurm" ]; then
  for _ in $(seq 20); do
    scontrol show job "$second_slurm" --oneliner 2>/dev/null | grep -q "JobState=CANCELLED" && break
    sleep 0.5
  done
  expect 0 "Slurm says its job was CANCELLED" "JobState=CANCELLED" -- \
    scontrol show job "$second_slurm" --oneliner
  if [ -n "$ACCOUNTING" ]; then
    for _ in $(seq 20); do  # slurmctld passes the end to slurmdbd shortly after
      sacct --noheader -X --jobs "$second_slurm" --format=State%30 2>/dev/null | grep -q CANCELLED && break
      sleep 0.5
    done
    expect 0 "sacct says CANCELLED" "CANCELLED" -- \
      sacct --noheader -X --jobs "$second_slurm" --format=State%30
  else
    echo "note - no accounting (mariadbd or slurmdbd missing or not starting): sacct not asked"
  fi
fi
left=""
for _ in $(seq 30); do  # Slurm's KillWait is 5 s
  left=$(squeue --noheader --steps --jobs "$second_slurm" 2>/dev/null; pgrep -af "$bin/traind-slurm-task")
  [ -z "$left" ] && break
  sleep 0.5
done
[ -z "$left" ] && pass "no step or task of the cancelled job is left running" \
  || fail "the cancelled job left: $left"

# 3. traind shut down while Slurm runs a job: the tasks checkpoint and stop, the job is re-queued,
#    and the next traind submits it again and it resumes from that checkpoint.
start_traind() {
  "$bin/traind" --slurm-address 127.0.0.1 >>"$work/traind.log" 2>&1 &
  traind_pid=$!
  for _ in $(seq 100); do
    [ -S "$work/state/traind/traind.sock" ] && return 0
    sleep 0.1
  done
  return 1
}
expect 0 "another long job is submitted to Slurm" "" -- \
  trainctl submit --backend slurm --processes 2 --model lenet5 --dataset fashion-mnist \
  --device cpu --epochs 50 --log-every 20
third=$(job_id)
for _ in $(seq 240); do  # until the ranks train
  trainctl logs "$third" 2>/dev/null | grep -q "Batch 0020" && break
  sleep 0.5
done
third_slurm=$(slurm_id "$third")
expect 0 "trainctl shutdown while Slurm runs it" "" -- timeout 60 trainctl shutdown
for _ in $(seq 100); do kill -0 "$traind_pid" 2>/dev/null || break; sleep 0.2; done
[ -f "$work/state/traind/jobs/$third/checkpoint.pt" ] \
  && pass "rank 0 checkpointed on the way down" || fail "no checkpoint in jobs/$third"
left=""
for _ in $(seq 30); do
  left=$(squeue --noheader --steps --jobs "$third_slurm" 2>/dev/null; pgrep -af "$bin/traind-slurm-task")
  [ -z "$left" ] && break
  sleep 0.5
done
[ -z "$left" ] && pass "the Slurm job's tasks stopped with traind" || fail "left running: $left"
start_traind || fail "traind did not come back"
for _ in $(seq 240); do
  trainctl logs "$third" 2>/dev/null | grep -q "Resumed from the checkpoint" && break
  sleep 0.5
done
expect 0 "the next traind resubmits it and it resumes from the checkpoint" \
  "Resumed from the checkpoint" -- trainctl logs "$third"
[ "$(grep -c "Submitted to Slurm as job" "$work/out")" = 2 ] \
  && pass "it went to Slurm twice" || fail "expected two submissions in its log"
expect 0 "and is cancelled again" "" -- trainctl cancel "$third"

# 4. What cannot go to Slurm is refused at submit, naming the field.
expect 2 "device cuda without --gpus-per-node is refused" "gpus_per_node" -- \
  trainctl submit --backend slurm --device cuda --model lenet5 --dataset fashion-mnist
expect 2 "a partition that is not a word is refused" "partition" -- \
  trainctl submit --backend slurm --device cpu --partition 'a;b' --model lenet5 --dataset fashion-mnist
expect 2 "--nodes beyond this traind and its peers is refused (none here)" "nodes: 1 to 1" -- \
  trainctl submit --nodes 2 --device cpu --model lenet5 --dataset fashion-mnist
expect 2 "an unknown backend is refused" "backend: local \\(default\\) or slurm" -- \
  trainctl submit --backend k8s --device cpu --model lenet5 --dataset fashion-mnist

# 5. A traind that finds no Slurm commands refuses --backend slurm at submit, saying what it needs.
mkdir -p "$work/noslurm"
env PATH="$bin" XDG_STATE_HOME="$work/noslurm" "$bin/traind" >"$work/noslurm.log" 2>&1 &
noslurm_pid=$!
for _ in $(seq 100); do [ -S "$work/noslurm/traind/traind.sock" ] && break; sleep 0.1; done
expect 1 "without sbatch on traind's PATH, --backend slurm is refused" "needs Slurm's sbatch" -- \
  env XDG_STATE_HOME="$work/noslurm" trainctl submit --backend slurm --device cpu --model lenet5 \
  --dataset fashion-mnist
kill "$noslurm_pid" 2>/dev/null; wait "$noslurm_pid" 2>/dev/null

if [ "$failures" != 0 ]; then
  echo "--- traind's log"; tail -30 "$work/traind.log"
  echo "--- slurmctld's log"; tail -15 "$work/slurm/slurmctld.log"
  echo "$failures check(s) failed"; exit 1
fi
echo "all checks passed"
