#!/usr/bin/env bash
# The Debian package in a pristine Debian 12 root (debootstrap, minbase): `apt-get install` of
# the .deb, the system unit's command run as its user, LeNet5 trained through it with trainctl,
# an upgrade to a newer build with a job running and one queued (both kept: the running one
# resumes from its checkpoint), `apt-get remove` keeping /var/lib/traind, `purge` removing it.
#   tests/package/package_test.sh BUILD_DIR
# Needs root (a chroot, mounts) and Debian's mirror; otherwise it skips, saying why (exit 77).
# The root and every process in it live in private mount and PID namespaces, so whatever happens
# nothing is left mounted or running. TRAIND_PACKAGE_TEST_CACHE (default
# /var/cache/traind-package-test) keeps the debootstrapped root and apt's downloads between runs.
set -euo pipefail
build=$(cd "${1:?usage: package_test.sh BUILD_DIR}" && pwd)
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }
log() { echo "package_test: [$(date +%T)] $*"; }

if [ -z "${TRAIND_PACKAGE_TEST_INNER:-}" ]; then
  [ "$(id -u)" = 0 ] || skip "needs root to make a Debian root (debootstrap, chroot, mount)"
  command -v debootstrap >/dev/null || skip "debootstrap is not installed (deploy/install-deps.sh --for package)"
  command -v cpack >/dev/null || skip "cpack is not installed"
  [ -f "$build/CPackConfig.cmake" ] || skip "$build has no CPackConfig.cmake (a build without LibTorch)"
  unshare --mount --pid --fork --propagation private true 2>/dev/null ||
    skip "cannot make private mount and PID namespaces here (unshare)"
  work=$(mktemp -d /var/tmp/traind-package-test.XXXXXX)
  trap 'rm -rf --one-file-system "$work"' EXIT
  status=0
  TRAIND_PACKAGE_TEST_INNER=1 TRAIND_PACKAGE_TEST_WORK=$work \
    unshare --mount --pid --fork --propagation private "$0" "$build" || status=$?
  exit $status
fi

# Inside the namespaces: PID 1 of them, so everything started here dies when this script ends.
work=$TRAIND_PACKAGE_TEST_WORK
root=$work/root
cache=${TRAIND_PACKAGE_TEST_CACHE:-/var/cache/traind-package-test}
mirror=${TRAIND_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$cache/apt-archives" "$root"
# One run at a time uses the cache (apt locks its archive directory; a second run would fail on it).
exec 9>"$cache/run.lock"
flock 9

log "making two packages of this build: 0.1.0+test1 and the upgrade 0.1.0+test2"
for version in 0.1.0+test1 0.1.0+test2; do
  cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/debs" \
    -D CPACK_PACKAGE_VERSION=$version >"$work/cpack.log" 2>&1 ||
    { cat "$work/cpack.log"; fail "cpack failed for $version"; }
done
old=$(ls "$work"/debs/traind_0.1.0+test1_*.deb)
new=$(ls "$work"/debs/traind_0.1.0+test2_*.deb)

if [ -f "$cache/bookworm-minbase.tar" ]; then
  log "unpacking the cached Debian 12 root"
  tar -C "$root" -xf "$cache/bookworm-minbase.tar"
else
  log "debootstrap: a minimal Debian 12 root from $mirror"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -20 "$work/debootstrap.log"
    grep -q "Couldn't download\|Failed getting release\|Temporary failure" "$work/debootstrap.log" &&
      skip "Debian's mirror $mirror cannot be reached"
    fail "debootstrap failed"
  }
  tar -C "$root" -cf "$cache/bookworm-minbase.tar.tmp" . && mv "$cache/bookworm-minbase.tar.tmp" "$cache/bookworm-minbase.tar"
fi
# The host's sources (bookworm, -updates, -security): the package depends on the versions of
# the libraries it was built against.
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  : >"$root/etc/apt/sources.list"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/dev/shm"
mount -t tmpfs tmpfs "$root/tmp"
mount --bind "$cache/apt-archives" "$root/var/cache/apt/archives"
cp "$old" "$new" "$root/tmp/"
old=/tmp/$(basename "$old")
new=/tmp/$(basename "$new")

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
apt_in_root() { in_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Dpkg::Use-Pty=0 "$@"; }

log "apt-get install ./$(basename "$old") (and what it depends on and recommends)"
apt_in_root update >"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log"; skip "apt-get update failed: Debian's mirror cannot be reached"; }
start=$(date +%s)
apt_in_root install "$old" >>"$work/apt.log" 2>&1 || { tail -30 "$work/apt.log"; fail "apt-get install of $old failed"; }
log "installed in $(( $(date +%s) - start )) s"

# The service as systemd would run it: the unit's User=, Environment= and ExecStart=.
unit=$root/usr/lib/systemd/system/traind.service
user=$(sed -n 's/^User=//p' "$unit")
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
environment=$(sed -n 's/^Environment=//p' "$unit")
[ "$user" = traind ] || fail "the unit runs as '$user', not traind"
uid=$(in_root id -u traind) || fail "no traind user"
[ "$uid" -lt 1000 ] || fail "traind is not a system user (uid $uid)"
owner=$(in_root stat -c %U:%a /var/lib/traind)
[ "$owner" = traind:700 ] || fail "/var/lib/traind is $owner, not traind:700"
for file in /etc/traind/traind.toml /usr/share/man/man8/traind.8.gz /usr/share/man/man1/trainctl.1.gz \
    /usr/share/bash-completion/completions/trainctl /usr/lib/systemd/user/traind.service; do
  [ -f "$root$file" ] || fail "the package has no $file"
done
# The dashboard on a port of this test's (the admin's edit, which an upgrade must keep).
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -i "s/^http = .*/http = \"127.0.0.1:$port\"/" "$root/etc/traind/traind.toml"

start_service() {
  log "starting the service's command as $user: $exec_start"
  # shellcheck disable=SC2086  # the unit's words, as systemd splits them
  in_root runuser -u "$user" -- env $environment $exec_start >>"$work/traind.log" 2>&1 &
  for _ in $(seq 1 600); do
    [ -S "$root/var/lib/traind/traind.sock" ] && trainctl devices >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$work/traind.log"
  fail "traind did not start"
}
trainctl() { in_root runuser -u traind -- env HOME=/var/lib/traind trainctl --addr unix:/var/lib/traind/traind.sock "$@"; }
job_field() {  # job_field ID FIELD: a field of `trainctl show ID --output json`
  trainctl show "$1" --output json | python3 -c "import json, sys; print(json.load(sys.stdin).get('$2', ''))"
}
wait_for_state() {  # wait_for_state ID STATE...
  local id=$1 state
  shift
  for _ in $(seq 1 3000); do
    state=$(job_field "$id" state)
    for wanted in "$@"; do [ "$state" = "$wanted" ] && return 0; done
    sleep 0.2
  done
  fail "job $id is $state, not $*"
}

start_service
in_root pgrep -u traind -x traind >/dev/null || fail "traind does not run as the traind user"
log "training LeNet5 through it"
trainctl submit --model lenet5 --dataset fashion-mnist --epochs 1 --limit-train 2000 --device cpu \
  --watch >"$work/watch.log" 2>&1 || { cat "$work/watch.log"; fail "LeNet5 did not train"; }
first=$(trainctl list --output json | python3 -c 'import json, sys; print(min(j["id"] for j in json.load(sys.stdin)["jobs"]))')
[ "$(job_field "$first" state)" = SUCCEEDED ] || fail "job $first: $(job_field "$first" state)"

log "a job running and one queued, then the upgrade"
running=$(trainctl submit --model lenet5 --dataset fashion-mnist --epochs 100000 --limit-train 500 --device cpu)
wait_for_state "$running" RUNNING
queued=$(trainctl submit --model mlp --dataset fashion-mnist --epochs 1 --limit-train 500 --device cpu)
[ "$(job_field "$queued" state)" = QUEUED ] || fail "job $queued is not queued"
apt_in_root install "$new" >>"$work/apt.log" 2>&1 || { tail -30 "$work/apt.log"; fail "the upgrade failed"; }
in_root pgrep -x traind >/dev/null && fail "the upgrade did not stop the old traind"
[ "$(in_root dpkg-query -W -f='${Version}' traind)" = 0.1.0+test2 ] || fail "the upgrade did not install 0.1.0+test2"
grep -q "^http = \"127.0.0.1:$port\"" "$root/etc/traind/traind.toml" || fail "the upgrade lost the config file's edit"
start_service
wait_for_state "$running" RUNNING
[ "$(job_field "$queued" state)" = QUEUED ] || fail "job $queued is no longer queued after the upgrade"
resumed=""
for _ in $(seq 1 3000); do
  trainctl logs "$running" | grep -q "^Resumed from the checkpoint" && { resumed=yes; break; }
  [ "$(job_field "$running" state)" = RUNNING ] || break
  sleep 0.2
done
[ -n "$resumed" ] || fail "job $running did not resume from its checkpoint: $(trainctl logs "$running" | tail -5)"
trainctl cancel "$running" >/dev/null
wait_for_state "$queued" SUCCEEDED

log "apt-get remove keeps the jobs and weights; purge removes them"
apt_in_root remove traind >>"$work/apt.log" 2>&1 || fail "apt-get remove failed"
in_root pgrep -x traind >/dev/null && fail "remove did not stop traind"
[ ! -e "$root/usr/bin/traind" ] || fail "remove left /usr/bin/traind"
ls "$root"/var/lib/traind/*.db >/dev/null 2>&1 || fail "remove deleted the job database: $(ls "$root/var/lib/traind")"
find "$root/var/lib/traind" -name '*.pt' | grep -q . || fail "remove deleted the weights"
[ -f "$root/etc/traind/traind.toml" ] || fail "remove deleted the config file"
apt_in_root purge traind >>"$work/apt.log" 2>&1 || fail "apt-get purge failed"
[ ! -e "$root/var/lib/traind" ] || fail "purge left /var/lib/traind"
[ ! -e "$root/etc/traind" ] || fail "purge left /etc/traind"
in_root id traind >/dev/null 2>&1 && fail "purge left the traind user"
log "passed"
