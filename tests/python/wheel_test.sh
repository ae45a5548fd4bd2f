#!/usr/bin/env bash
# The wheel the build makes (build/dist) installs on its own and holds the whole package: the
# program side (`import traind`) and the client with its generated gRPC code (`traind.client`),
# importable away from the build tree, and talking to a real traind (with_daemon.sh's).
#   tests/python/with_daemon.sh BIN_DIR tests/python/wheel_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: wheel_test.sh BUILD_DIR}" && pwd)
wheel=$(ls "$build"/dist/traind-*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "SKIP: no wheel in $build/dist (python3-pip, -setuptools, -wheel)"; exit 77; }
/usr/bin/python3 -c 'import grpc' 2>/dev/null || { echo "SKIP: no python3-grpcio"; exit 77; }
site=$(mktemp -d /tmp/traind-wheel.XXXXXX)
trap 'rm -rf "$site"' EXIT
/usr/bin/python3 -m pip install --quiet --no-deps --no-index --target "$site" "$wheel"
cd "$site"  # nothing of the build tree on the path
PYTHONPATH=$site /usr/bin/python3 - <<'PY'
import os, traind
from traind.client import Client, pb
assert os.path.dirname(traind.__file__).startswith(os.environ["PYTHONPATH"]), traind.__file__
with Client() as daemon:
    devices = [d.name for d in daemon.devices()]
    assert "cpu" in devices, devices
print("ok: the wheel's traind.client lists devices:", ", ".join(devices))
PY

# The install docs/scripts.md gives a user of Debian 12, whose own Python refuses a plain
# `pip install` (externally-managed-environment): a virtual environment that sees Debian's
# packages, the wheel installed into it with its pip.
if ! /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "SKIP (the documented install): no python3-venv"
  exit 0
fi
venv=$(mktemp -d /tmp/traind-venv.XXXXXX)
trap 'rm -rf "$site" "$venv"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet --no-index "$wheel"
cd "$venv"  # not the folder the first check installed into
"$venv/bin/python3" - <<'PY'
import sys, traind
from traind.client import Client
assert traind.__file__.startswith(sys.prefix), traind.__file__
with Client() as daemon:
    assert "cpu" in [d.name for d in daemon.devices()]
print("ok: the documented venv install's traind.client lists devices")
PY
