#!/usr/bin/env bash
# Configures and builds into build/ (Release, ccache when present). Extra arguments go to
# `cmake --build`, e.g. `--target trainctl`.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TRAIND_BUILD_JOBS:-2}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs" "$@"
