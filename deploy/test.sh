#!/usr/bin/env bash
# Installs the dependencies, builds everything and runs every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
start=$(date +%s)
deploy/build.sh
echo "test.sh: built in $(( $(date +%s) - start )) s"
ctest --test-dir build --output-on-failure -j"${TRAIND_TEST_JOBS:-2}" --timeout 600
