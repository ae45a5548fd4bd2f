# Helpers the bench/ scripts share. Source it from the project root:
#   cd "$(dirname "$0")/.." && source bench/lib.sh
# It sets `bin` (BUILD_DIR's bin, default build/bin) and `python` (PYTHON, else the Debian
# python3 when it imports torch — a pyenv python3 earlier on PATH usually does not — else python3).

bin=$PWD/${BUILD_DIR:-build}/bin
python=${PYTHON:-$([ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null && echo /usr/bin/python3 || echo python3)}

# start_traind DIR [VAR=VALUE...]: a private traind with state in DIR, listening on
# unix:DIR/traind.sock, its log in DIR/log and its pid in DIR/pid, with the variables in its (and
# so its workers') environment. Returns once it answers, or fails after 20 s.
start_traind() {
  local dir=$1; shift
  mkdir -p "$dir"
  env "$@" "$bin/traind" --state-dir "$dir" >"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  for _ in $(seq 1 100); do
    "$bin/trainctl" --addr "unix:$dir/traind.sock" devices >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "traind did not start; its log: $dir/log" >&2
  return 1
}

# stop_traind DIR: stops a traind that start_traind started there (if any).
stop_traind() { [ -f "$1/pid" ] && kill "$(cat "$1/pid")" 2>/dev/null; return 0; }

# median: the median of the numbers on stdin, one per line (nothing for no input).
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# median_range [FORMAT]: "MEDIAN [MIN-MAX]" of the numbers on stdin, each printed with FORMAT
# (default %.3f); nothing for no input. What the bars' figures are quoted as.
median_range() {
  sort -g | awk -v f="${1:-%.3f}" '{a[NR]=$1} END {if (!NR) exit
    printf f " [" f "-" f "]", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2), a[1], a[NR]}'
}

# steady JSON_LIST: seconds per epoch from a job's epoch times: the mean of epochs 2..N (the first
# pays one-time costs: CUDA context, cuDNN autotuning, the allocator's first allocations), or
# epoch 1 when there is only one.
steady() { "$python" -c 'import json,sys; t=json.loads(sys.argv[1]); t=t[1:] or t; print(sum(t)/len(t))' "$1"; }

# job_epoch_times ID: waits for traind job ID (at TRAINCTL_ADDR) to end and prints its epoch
# times without evaluation as a JSON list, "[]" when it has none (it failed).
job_epoch_times() {
  "$bin/trainctl" watch "$1" >/dev/null 2>&1 || true
  "$bin/trainctl" show "$1" --output json |
    "$python" -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("result",{}).get("epochSecondsNoEval",[])))'
}

# epoch_seconds SUBMIT_FLAGS...: submits a job with these `trainctl submit` flags (at
# TRAINCTL_ADDR), waits for it and prints its seconds per epoch (steady); the flags and epoch times
# go to stderr. Fails when the job did.
epoch_seconds() {
  local id times
  id=$("$bin/trainctl" submit "$@")
  times=$(job_epoch_times "$id")
  [ "$times" != "[]" ] || { echo "job $id failed" >&2; return 1; }
  echo "$* $times" >&2
  steady "$times"
}
