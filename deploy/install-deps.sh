#!/usr/bin/env bash
# Installs what traind needs, by purpose: Debian/Ubuntu packages (apt-get) or Homebrew formulas
# (macOS). Says what it installs and how long it took; installs nothing already there.
#   deploy/install-deps.sh [--for PURPOSE ...]     (default: run)
# Purposes (each list below says why each package is in it):
#   run       build traind, trainctl and the worker, and train (deploy/quickstart.sh)
#   python    the Python client and script jobs' examples (PyTorch, torchvision, grpcio)
#   test      run, python and what the tests add: GoogleTest, the ASan build, and the three
#             below (deploy/test.sh: every test)
#   slurm     the Slurm backend's client commands, and a private Slurm for its tests
#   browser   the dashboard's tests in a headless browser
#   package   deploy/package.sh (the .deb and the wheel) and its test in a Debian 12 root
#   bench     the benchmarks that compare with other tools (bench/search_vs_optuna.py: Optuna)
#   all       every purpose
set -euo pipefail

purposes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --for) shift; [ $# -gt 0 ] || { echo "install-deps: --for needs a purpose" >&2; exit 2; }
      purposes+=("$1"); shift ;;
    --with-bench) shift ;;  # old scripts': PyTorch is in `python`
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps: unknown argument '$1' (--for run|python|test|slurm|browser|package|bench|all)" >&2
       exit 2 ;;
  esac
done
[ ${#purposes[@]} -gt 0 ] || purposes=(run)

if [ "$(uname -s)" = Darwin ]; then
  formulas="cmake pkg-config ccache pytorch grpc protobuf abseil sqlite cli11 yaml-cpp tomlplusplus cpp-httplib prometheus-cpp node"
  case " ${purposes[*]} " in *" test "* | *" all "*) formulas="$formulas googletest" ;; esac
  command -v brew >/dev/null || { echo "install Homebrew first: https://brew.sh" >&2; exit 1; }
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

# --- run: building and running traind (what deploy/quickstart.sh installs) ---
# The compiler and build tools; ccache keeps rebuilds short.
run="build-essential cmake pkg-config ccache"
# LibTorch (the worker trains with it) and Gloo (data parallel on the CPU); libopenblas0-pthread:
# Debian's LibTorch calls the system BLAS, which is the slow reference BLAS unless OpenBLAS is
# installed (an MLP epoch: 18.9 s -> 0.74 s, docs/benchmarks-history.md).
run="$run libtorch-dev libgloo-dev libopenblas0-pthread"
# gRPC and Protobuf (the API), Abseil, SQLite (the job store), CLI11 (flags), yaml-cpp (sweep
# files), toml++ (config files), zlib (gzip datasets), stb (image-folder datasets), OpenSSL
# (TLS, SHA-256 of uploads).
run="$run libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libabsl-dev
libsqlite3-dev libcli11-dev libyaml-cpp-dev libtomlplusplus-dev zlib1g-dev libstb-dev openssl libssl-dev"
# traind --http: cpp-httplib (the dashboard, JSON API) and prometheus-cpp (/metrics); nodejs and
# npm fetch the dashboard's chart library (uPlot, web/package-lock.json) at build time.
run="$run libcpp-httplib-dev prometheus-cpp-dev nodejs"
# The dataset the quick start trains on, and bubblewrap: the sandbox of script jobs' programs
# (traind --script-sandbox, docs/security.md).
run="$run dataset-fashion-mnist bubblewrap"

# --- python: the Python client and what script jobs' examples import ---
# python3-grpcio, python3-protobuf: traind.client (examples/python/); python3-pip, -setuptools,
# -wheel: the build makes a wheel of the traind package (build/dist); python3-venv: where users
# install it (Debian's Python refuses `pip install` outside a venv, PEP 668).
python="python3-grpcio python3-protobuf python3-pip python3-setuptools python3-wheel python3-venv"
# PyTorch on the LibTorch above, torchvision and PIL: examples/scripts/, examples/python/ and the
# "your model" tests script models and write data with them.
python="$python python3-torch python3-torchvision python3-pil"

# --- test: what deploy/test.sh adds (it also installs python, slurm, browser and package) ---
# GoogleTest; clang and its sanitizer runtimes: the ASan/UBSan build and the fuzz targets;
# clang-format: the format check; iproute2: tests/remote/ puts traind in network namespaces; zsh and
# fish: the completion test drives their own completion.
test="libgtest-dev clang clang-format libclang-rt-14-dev iproute2 zsh fish"

# --- slurm: traind --backend slurm, and tests/slurm/'s private one-node Slurm ---
# slurm-client: sbatch, squeue, scancel (how traind submits); slurmctld, slurmd and munge: the
# tests' own controller, node and key; slurmdbd and MariaDB: its accounting (what sacct reads).
# Their system services are left unconfigured.
slurm="slurm-client slurmctld slurmd munge slurmdbd mariadb-server"

# --- browser: the dashboard's tests ---
# Chromium, driven headless by puppeteer-core (npm, web/package-lock.json); Prometheus' own
# text-format parser reads /metrics.
browser="chromium python3-prometheus-client"

# --- package: deploy/package.sh and tests/package/ ---
# dpkg-dev: dpkg-shlibdeps (the .deb's Depends); debootstrap: the pristine Debian 12 root the
# package is installed, upgraded and purged in.
package="dpkg-dev debootstrap python3-pip python3-setuptools python3-wheel"

# --- bench: what bench/ compares traind with ---
# Optuna 3.1 (TPE and its successive-halving pruner): bench/search_vs_optuna.py.
bench="python3-optuna"

packages=""
for purpose in "${purposes[@]}"; do
  case "$purpose" in
    run) packages="$packages $run" ;;
    python) packages="$packages $run $python" ;;
    slurm) packages="$packages $slurm" ;;
    browser) packages="$packages $browser" ;;
    package) packages="$packages $run $package" ;;
    bench) packages="$packages $run $python $bench" ;;
    test) packages="$packages $run $python $test $slurm $browser $package" ;;
    all) packages="$packages $run $python $test $slurm $browser $package $bench" ;;
    *) echo "install-deps: unknown purpose '$purpose' (run, python, test, slurm, browser, package, bench, all)" >&2
       exit 2 ;;
  esac
done
# npm: Debian's package, unless an npm is already there (NodeSource's nodejs ships its own and
# conflicts with Debian's npm).
command -v npm >/dev/null || packages="$packages npm"

missing=""
for p in $(echo $packages | tr ' ' '\n' | sort -u); do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: the Debian packages for ${purposes[*]} are already installed"
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
start=$(date +%s)
echo "install-deps: for ${purposes[*]}, installing:$missing"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
echo "install-deps: installed $(echo $missing | wc -w) packages in $(( $(date +%s) - start )) s"
