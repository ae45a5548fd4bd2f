#!/usr/bin/env bash
# Configures and builds into build/ (Release, ccache when present). Extra arguments go to
# `cmake --build`, e.g. `--target trainctl`. TRAIND_BUILD_TESTS=OFF configures without the tests
# (no GoogleTest needed: deploy/quickstart.sh); the default is ON.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TRAIND_BUILD_JOBS:-2}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTRAIND_BUILD_TESTS="${TRAIND_BUILD_TESTS:-ON}" >/dev/null
cmake --build build -j"$jobs" "$@"
