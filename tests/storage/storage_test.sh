#!/usr/bin/env bash
# The store under a full disk and a read-only state directory. A full disk under a running traind:
# it answers with a clear error, keeps running, loses nothing it acknowledged, and works again once
# there is space. A read-only state directory: traind refuses to start, saying why. (A file system
# cannot be remounted read-only under a process writing to it, so that case is tested at start.) The state directory is a small tmpfs in a private mount namespace (so nothing outside is
# touched); needs root and unshare, skips (77) with the reason otherwise.
#   tests/storage/storage_test.sh BIN_DIR
set -uo pipefail
bin=$(cd "${1:?usage: storage_test.sh BIN_DIR}" && pwd)
# shellcheck source=../lib/checks.sh
source "$(dirname "$0")/../lib/checks.sh"  # skip, pass, fail, expect

if [ -z "${TRAIND_IN_MOUNT_NS:-}" ]; then
  command -v unshare >/dev/null || skip "no unshare (util-linux)"
  unshare -m true 2>/dev/null || skip "cannot create a mount namespace here"
  TRAIND_IN_MOUNT_NS=1 exec unshare -m --propagation private "$0" "$@"
fi

work=$(mktemp -d /tmp/traind-storage.XXXXXX)   # logs and outputs: not on the small disk
disk=$work/disk
mkdir "$disk"
mount -t tmpfs -o size=4m tmpfs "$disk" || { rmdir "$disk"; rm -rf "$work"; skip "cannot mount a tmpfs here"; }
state=$disk/state
export TRAINCTL_ADDR=unix:$state/traind.sock TRAINCTL_CONFIG=$work/none.toml
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; umount "$disk"; rm -rf "$work"; }
trap cleanup EXIT

start() {
  "$bin/traind" --state-dir "$state" >>"$work/traind.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do "$bin/trainctl" devices >/dev/null 2>&1 && return; sleep 0.1; done
  fail "traind did not start"; cat "$work/traind.log"
}
# Queued only (the queue is paused): the test is about the store, not training.
submit() { "$bin/trainctl" submit --model mlp --dataset fashion-mnist --epochs 1 "$@"; }

start
"$bin/trainctl" pause >/dev/null
acked=()
for _ in 1 2 3; do acked+=("$(submit)"); done

# Full disk: fill the tmpfs, then submit.
dd if=/dev/zero of="$disk/filler" bs=64k 2>/dev/null
expect 1 "a submit on a full disk is RESOURCE_EXHAUSTED, naming the disk" "disk full|database or disk is full" -- submit
kill -0 "$pid" 2>/dev/null && pass "traind keeps running on a full disk" || fail "traind died on a full disk"
expect 0 "jobs stored before the disk filled are still readable" "QUEUED" -- "$bin/trainctl" show "${acked[0]}"
rm -f "$disk/filler"
id=$(submit) && acked+=("$id") && pass "submits work again once there is space (job $id)" \
  || fail "submit after freeing space"

# Restart: integrity check at start; every acknowledged job is there, nothing else.
kill "$pid"; wait "$pid"; pid=
start
listed=$("$bin/trainctl" list --all --output json | grep -o '"id": *"[0-9]*"' | grep -o '[0-9]*' | sort -n | tr '\n' ' ')
want=$(printf '%s\n' "${acked[@]}" | sort -n | tr '\n' ' ')
[ "$listed" = "$want" ] && pass "after a restart exactly the acknowledged jobs are stored: $want" \
  || fail "after a restart: stored [$listed], acknowledged [$want]"

# A read-only state directory at start is a one-line error, not a crash.
kill "$pid"; wait "$pid"; pid=
mount -o remount,ro "$disk" || fail "remount read-only"
expect 1 "traind refuses to start on a read-only state directory, saying why" "traind: .*([Rr]ead-only|readonly)" -- \
  "$bin/traind" --state-dir "$state"
mount -o remount,rw "$disk"

# A program that fills the disk holding traind's state (its job's outputs are there): its end is
# still stored (traind gives back its reserve for it), so the job does not stay RUNNING; it can
# be deleted, which frees the space; and the next job runs, with the reserve taken again.
if [ -x /usr/bin/python3 ]; then
  big=$work/big
  mkdir "$big"
  if mount -t tmpfs -o size=64m tmpfs "$big"; then
    state=$big/state
    export TRAINCTL_ADDR=unix:$state/traind.sock
    "$bin/traind" --state-dir "$state" --python python3=/usr/bin/python3 \
      >>"$work/traind.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do "$bin/trainctl" devices >/dev/null 2>&1 && break; sleep 0.1; done
    [ -f "$state/reserve" ] && pass "traind keeps a reserve in its state directory" \
      || fail "no reserve in $state"
    mkdir "$work/fill"
    cat >"$work/fill/fill.py" <<'PY'
import os
block = b"x" * (1 << 20)
with open(os.path.join(os.environ["TRAIND_OUTPUT_DIR"], "fill.bin"), "wb") as f:
    try:
        while True:
            f.write(block)
            f.flush()
    except OSError as e:
        print("the disk is full:", e, flush=True)
PY
    job=$("$bin/trainctl" run -C "$work/fill" --device cpu -- python3 fill.py)
    expect 0 "a program that fills the disk still ends: its end is stored" "" -- \
      "$bin/trainctl" wait "$job" --timeout 120
    expect 0 "the job is not left RUNNING" "SUCCEEDED|FAILED" -- "$bin/trainctl" show "$job"
    grep -q "the disk holding traind's state is full" "$work/traind.log" \
      && pass "traind says the disk was full" || fail "traind's log does not say the disk was full"
    expect 0 "the job that filled the disk can be deleted" "" -- "$bin/trainctl" delete "$job"
    for _ in $(seq 1 100); do [ -f "$state/reserve" ] && break; sleep 0.1; done
    [ -f "$state/reserve" ] && pass "the reserve is taken again once there is room" \
      || fail "the reserve was not taken again"
    printf 'print("after the flood")\n' >"$work/fill/after.py"
    job=$("$bin/trainctl" run -C "$work/fill" --device cpu -- python3 after.py)
    expect 0 "the next job runs" "" -- "$bin/trainctl" wait "$job" --timeout 120
    kill "$pid"; wait "$pid"; pid=
    umount "$big"
  else
    fail "cannot mount a second tmpfs"
  fi
fi

echo "$failures failure(s)"
[ "$failures" = 0 ]
