#!/usr/bin/env bash
# Builds traind and makes its Debian package with CPack: dist/traind_<version>_amd64.deb holding
# traind, traind-worker, trainctl and their helpers in /usr/bin, the system unit (the `traind`
# user, state in /var/lib/traind), the user unit, /etc/traind/traind.toml, man pages, bash/zsh/fish
# completions, and the Python client's wheel (also copied to dist/). docs/install.md.
#   deploy/package.sh [--version VERSION]
# The default version, 0.1.0+<commits>.g<commit>, grows with every commit, so a newer build
# upgrades an older one.
set -euo pipefail
cd "$(dirname "$0")/.."
version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version=${2:?--version needs a value}; shift 2 ;;
    -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown argument '$1' (--version VERSION)" >&2; exit 2 ;;
  esac
done
if [ -z "$version" ]; then
  commits=$(git rev-list --count HEAD 2>/dev/null || echo 0)
  version="0.1.0+$commits.g$(git rev-parse --short=9 HEAD 2>/dev/null || echo unknown)"
fi
case "$version" in
  [0-9]*) ;;
  *) echo "package.sh: --version must start with a digit (Debian's rule), got '$version'" >&2; exit 2 ;;
esac
command -v dpkg-shlibdeps >/dev/null ||
  { echo "package.sh: dpkg-shlibdeps is missing (apt-get install dpkg-dev)" >&2; exit 1; }
start=$(date +%s)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "-DTRAIND_PACKAGE_VERSION=$version" >/dev/null
cmake --build build -j"${TRAIND_BUILD_JOBS:-2}" --target traind traind-worker trainctl traind-slurm \
  traind-slurm-task traind-hosts traind-script traind_wheel traind_docs
echo "package.sh: built in $(( $(date +%s) - start )) s"
mkdir -p dist
(cd build && cpack -G DEB -B "$PWD/../dist" >/dev/null)
rm -rf dist/_CPack_Packages
cp build/dist/traind-*.whl dist/
deb=dist/traind_${version}_amd64.deb
[ -f "$deb" ] || { echo "package.sh: cpack made no $deb" >&2; ls dist >&2; exit 1; }
echo "package.sh: $deb ($(du -h "$deb" | cut -f1)); Depends: $(dpkg-deb -f "$deb" Depends | cut -c1-200)..."
echo "package.sh: install it with: sudo apt-get install ./$deb"
