#!/usr/bin/env bash
# Builds the fuzz targets into build-fuzz/ (clang, libFuzzer, ASan, UBSan) and runs them side by
# side for SECONDS each (default 600), one process per target. The corpus each run grows is kept in
# build-fuzz/fuzz-work/corpus/TARGET (the next run starts from it), findings go to
# build-fuzz/fuzz-work/artifacts/, logs to build-fuzz/fuzz-work/TARGET.log. docs/testing.md.
#   fuzz/run.sh [SECONDS [TARGET...]]     TARGET: job_file, event_stream, request, metric_lines
#                                          (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
[ $# -gt 0 ] && shift
targets=${*:-job_file event_stream request metric_lines}
build=${TRAIND_FUZZ_BUILD_DIR:-build-fuzz}

cmake -S . -B "$build" -DTRAIND_FUZZ=ON -DCMAKE_CXX_COMPILER="${CXX:-clang++}" >/dev/null
fuzzers=""
for t in $targets; do fuzzers="$fuzzers ${t}_fuzzer"; done
cmake --build "$build" -j"${TRAIND_BUILD_JOBS:-2}" --target event_stream_seeds request_seeds $fuzzers

work=$build/fuzz-work
mkdir -p "$work/artifacts"
"$build/bin/event_stream_seeds" "$work/seeds/event_stream"
"$build/bin/request_seeds" "$work/seeds/request"
pids=""
for t in $targets; do
  seeds=fuzz/corpus/$t
  [ -d "$seeds" ] || seeds=$work/seeds/$t
  dict=""
  [ -f "fuzz/$t.dict" ] && dict="-dict=fuzz/$t.dict"
  mkdir -p "$work/corpus/$t"
  echo "run.sh: $t for ${seconds}s, log: $work/$t.log"
  "$build/bin/${t}_fuzzer" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$work/artifacts/$t-" $dict "$work/corpus/$t" "$seeds" >"$work/$t.log" 2>&1 &
  pids="$pids $!"
done
status=0
for pid in $pids; do wait "$pid" || status=1; done
for t in $targets; do
  echo "== $t: $(grep -E '^#[0-9]+[[:space:]]+(DONE|NEW|REDUCE|pulse)' "$work/$t.log" | tail -1)"
  grep -E '^(stat::|SUMMARY|==[0-9]+==ERROR)' "$work/$t.log" || true
done
ls "$work/artifacts"
exit $status
