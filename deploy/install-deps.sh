#!/usr/bin/env bash
# Installs what traind needs to build and run: Debian/Ubuntu packages (apt-get) or Homebrew
# formulas (macOS). Says what it installs; installs nothing that is already there.
# libopenblas0-pthread: Debian's LibTorch calls the system BLAS, which is the slow reference BLAS
# unless OpenBLAS is installed (an MLP epoch: 18.9 s -> 0.74 s here, docs/benchmarks-history.md).
# python3-grpcio, python3-protobuf: the Python client (traind.client, examples/python/, ~8 MB);
# its code generator, grpc_python_plugin, comes with protobuf-compiler-grpc. python3-pip,
# python3-setuptools, python3-wheel: the build makes a wheel of the traind package (build/dist);
# python3-venv: where it is installed (Debian 12's own Python refuses `pip install` outside a
# virtual environment: PEP 668's externally-managed-environment; docs/scripts.md).
# bubblewrap: the sandbox script jobs' programs run in (traind --script-sandbox, docs/security.md).
# python3-torch, python3-pil: PyTorch itself (on the LibTorch already installed), which the
# "your model" tests and examples/python/train_my_model.py script models and write data with;
# python3-torchvision: the example training programs run as script jobs (examples/scripts/, the
# seed's ResNet-18 FakeData loop) and their tests.
# libstb-dev: stb_image, which decodes image-folder datasets (PNG, JPEG).
# clang, libclang-rt-14-dev: the ASan/UBSan build deploy/test.sh runs and the fuzz targets
# (libFuzzer), docs/testing.md.
# libcpp-httplib-dev, prometheus-cpp-dev: traind --http (the dashboard, JSON API, /metrics);
# nodejs + npm: the build fetches the dashboard's chart library (uPlot) with npm ci from
# web/package-lock.json; chromium, python3-prometheus-client: the dashboard's tests (a headless
# browser; Prometheus' own text-format parser).
#   deploy/install-deps.sh [--with-bench]   (accepted for old scripts: PyTorch is always installed)
set -euo pipefail


if [ "$(uname -s)" = Darwin ]; then
  command -v brew >/dev/null || { echo "install Homebrew first: https://brew.sh" >&2; exit 1; }
  formulas="cmake pkg-config ccache pytorch grpc protobuf abseil googletest sqlite cli11 yaml-cpp tomlplusplus cpp-httplib prometheus-cpp node"
  missing=""
  for f in $formulas; do brew list --versions "$f" >/dev/null 2>&1 || missing="$missing $f"; done
  if [ -n "$missing" ]; then
    echo "install-deps: brew install$missing"
    brew install $missing
  fi
  echo "install-deps: Fashion-MNIST is not packaged for macOS; download the four IDX files and"
  echo "install-deps: export FASHION_MNIST_DIR=/path/to/them (see docs/macos.md)"
  exit 0
fi

packages="build-essential cmake pkg-config ccache libtorch-dev libgloo-dev libopenblas0-pthread libgrpc++-dev libprotobuf-dev
protobuf-compiler protobuf-compiler-grpc libabsl-dev libgtest-dev libsqlite3-dev libcli11-dev
libyaml-cpp-dev libtomlplusplus-dev zlib1g-dev libstb-dev dataset-fashion-mnist python3-grpcio python3-protobuf python3-torch python3-torchvision python3-pil python3-pip python3-setuptools python3-wheel python3-venv
openssl libssl-dev iproute2 bubblewrap clang clang-format libclang-rt-14-dev
libcpp-httplib-dev prometheus-cpp-dev nodejs chromium python3-prometheus-client
slurm-client slurmctld slurmd munge slurmdbd mariadb-server"
# Slurm: its client commands are how traind submits jobs with --backend slurm; slurmctld, slurmd
# and munge let tests/slurm/ start a private one-node Slurm (with its own config and key) to test
# against, slurmdbd and MariaDB its accounting (what sacct reads). Their system services are left
# unconfigured.

# npm: Debian's package, unless an npm is already there (NodeSource's nodejs ships its own and
# conflicts with Debian's npm).
command -v npm >/dev/null || packages="$packages npm"

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all Debian packages are already installed"
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
echo "install-deps: installing:$missing"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
