#!/usr/bin/env bash
# deploy/quickstart.sh on a fresh Debian 12 machine, as a new user meets it: a pristine minimal
# root (debootstrap), a clone of this repository's HEAD, nothing cached (apt downloads every
# package, the build starts without ccache), run as root in that root, N times in a row. Prints
# each run's "Timings:" line (the parts: dependencies, build, start, LeNet5's epoch) and keeps each
# run's whole output in /var/tmp/fresh_quickstart-N.log. docs/benchmarks.md#quick-start.
#   sudo bench/fresh_quickstart.sh [RUNS]      (default 3; needs root and Debian's mirror)
# Each run lives in private mount and PID namespaces: nothing is left running or mounted.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
[ "$(id -u)" = 0 ] || { echo "fresh_quickstart: needs root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "fresh_quickstart: apt-get install debootstrap" >&2; exit 2; }
repo=$PWD
mirror=${TRAIND_DEBIAN_MIRROR:-http://deb.debian.org/debian}
base=${TRAIND_PACKAGE_TEST_CACHE:-/var/cache/traind-package-test}/bookworm-minbase.tar
mkdir -p "$(dirname "$base")"
if [ ! -f "$base" ]; then
  root=$(mktemp -d /var/tmp/traind-base.XXXXXX)
  debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
  tar -C "$root" -cf "$base.tmp" . && mv "$base.tmp" "$base"
  rm -rf --one-file-system "$root"
fi
echo "fresh_quickstart: commit $(git rev-parse --short=9 HEAD), $(nproc) cores, $(date -u +%F)"
for run in $(seq 1 "$runs"); do
  work=$(mktemp -d /var/tmp/traind-fresh.XXXXXX)
  root=$work/root
  mkdir -p "$root"
  tar -C "$root" -xf "$base"
  git clone -q --no-local "$repo" "$root/root/traind"
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
    : >"$root/etc/apt/sources.list"
  fi
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # This host's own extra certificate authorities (a TLS-inspecting proxy's, which its npm trusts
  # through NODE_EXTRA_CA_CERTS), so npm in the root reaches the registry as npm here does.
  extra_ca=""
  if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
    cat /usr/local/share/ca-certificates/*.crt >"$root/root/extra-ca.crt"
    extra_ca=NODE_EXTRA_CA_CERTS=/root/extra-ca.crt
  fi
  log=/var/tmp/fresh_quickstart-$run.log
  status=0
  unshare --mount --pid --fork --propagation private bash -c '
    set -e
    root=$1
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/dev/shm"
    mount -t tmpfs tmpfs "$root/tmp"
    chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 $2 \
      TRAIND_HTTP=127.0.0.1:0 bash -c "cd /root/traind && deploy/quickstart.sh"
  ' fresh "$root" "$extra_ca" >"$log" 2>&1 || status=$?
  echo "run $run (exit $status): $(grep '^Timings:' "$log" || echo 'no Timings line; see '"$log")"
  rm -rf --one-file-system "$work"
done
