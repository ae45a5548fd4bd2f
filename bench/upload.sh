#!/usr/bin/env bash
# Uploading a large file to traind over its Unix socket (issue "your model, your data"):
#   1. a SIZE_MB file (default 1024) uploaded with `trainctl upload`: seconds and MB/s;
#   2. traind's peak RSS (VmHWM) before and after: the upload must not hold the file in memory;
#   3. the same content again: only hashed on the client, nothing sent (seconds);
#   4. an upload killed half way (SIGKILL of trainctl): no blob with that digest, nothing left in
#      blobs/incoming once traind has seen the call end.
# Repeats ROUNDS times (default 3), a fresh daemon and file each round; prints one line per round.
#   bench/upload.sh            SIZE_MB=1024 ROUNDS=3 BUILD_DIR=build
set -euo pipefail
cd "$(dirname "$0")/.." && source bench/lib.sh
size_mb=${SIZE_MB:-1024}
rounds=${ROUNDS:-3}
work=$(mktemp -d /tmp/traind-upload-bench.XXXXXX)
trap 'stop_traind "$work/d"; rm -rf "$work"' EXIT
export TRAINCTL_ADDR="unix:$work/d/traind.sock"
hwm() { awk '/VmHWM/ {print $2}' "/proc/$(cat "$work/d/pid")/status"; }  # KiB
now() { date +%s.%N; }

for round in $(seq 1 "$rounds"); do
  stop_traind "$work/d"; sleep 0.5; rm -rf "$work/d"
  start_traind "$work/d"
  head -c $((size_mb << 20)) /dev/urandom >"$work/file"
  before=$(hwm)
  t0=$(now); "$bin/trainctl" upload "$work/file" >/dev/null 2>&1; t1=$(now)
  after=$(hwm)
  "$bin/trainctl" upload "$work/file" >/dev/null 2>"$work/again"; t2=$(now)
  grep -q "already on the daemon" "$work/again" || { echo "second upload was sent again" >&2; exit 1; }
  # The interrupted upload: other content of the same size, killed at about half of its time.
  head -c $((size_mb << 20)) /dev/urandom >"$work/other"
  half=$("$python" -c "print(max(0.2, ($t1 - $t0) / 2))")
  "$bin/trainctl" upload "$work/other" >/dev/null 2>&1 & pid=$!
  sleep "$half"; kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  sleep 1
  digest=sha256:$(sha256sum "$work/other" | cut -c1-64)
  left=$(ls "$work/d/blobs/incoming" | wc -l)
  stored=no; [ -e "$work/d/blobs/sha256/${digest#sha256:}" ] && stored=yes
  "$python" - "$size_mb" "$t0" "$t1" "$t2" "$before" "$after" "$left" "$stored" "$round" <<'PY'
import sys
mb, t0, t1, t2, before, after, left, stored, rnd = sys.argv[1:]
mb, t0, t1, t2 = int(mb), float(t0), float(t1), float(t2)
print(f"round {rnd}: {mb} MiB in {t1 - t0:.2f} s = {mb * 1.048576 / (t1 - t0):.0f} MB/s; "
      f"traind peak RSS {int(before) // 1024} -> {int(after) // 1024} MiB; "
      f"same content again {t2 - t1:.2f} s; killed upload: stored={stored}, "
      f"files left in incoming/={left}")
PY
  rm -f "$work/other"
done
