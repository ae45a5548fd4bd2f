#!/usr/bin/env bash
# ThreadSanitizer run of the code without LibTorch (issue 18, docs/testing.md): the daemon's
# library, trainctl's, their unit tests and the fuzz corpora replayed, under TSan. A command of its
# own rather than part of deploy/test.sh: cold, it adds about 25 minutes on 2 cores, which CI's
# budget does not have room for beside the main and ASan suites.
#
# TSan understands only the synchronisation it instruments, and every absl::Mutex (ours, and the
# ones inside gRPC) lives in Debian's uninstrumented Abseil. So this first builds Abseil exactly
# as Debian 12 ships it (the source package of the installed version and its patches, from
# deb.debian.org, checked against the .dsc's SHA-256 sums) with -fsanitize=thread, under Debian's
# library names, into build-tsan/absl/lib, which the TSan binaries find first through their RPATH. gRPC's own code stays uninstrumented: tests/tsan/suppressions.txt lists what that
# makes TSan misreport, each with its reason.
#   usage: deploy/tsan.sh            (after deploy/install-deps.sh --for test; TRAIND_BUILD_JOBS=2)
#          TRAIND_TSAN_INTEGRATION=1 deploy/tsan.sh   adds tests/: the TSan daemon and trainctl
#                                    with build/'s worker (build it first: deploy/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${TRAIND_BUILD_JOBS:-2}
start=$(date +%s)
command -v clang++ >/dev/null || { echo "tsan.sh: clang++ not found (deploy/install-deps.sh --for test installs it)" >&2; exit 2; }

# 1. Abseil, as Debian builds it, with TSan.
version=$(dpkg-query -W -f='${Version}' libabsl-dev)  # e.g. 20220623.1-1+deb12u2
upstream=${version%%-*}
absl=$root/build-tsan/absl
lib=$absl/lib
if [ ! -f "$lib/.built-$version" ]; then
  mkdir -p "$absl/download"
  cd "$absl/download"
  dsc=abseil_${version}.dsc
  for mirror in http://deb.debian.org/debian http://deb.debian.org/debian-security; do
    curl -fsS -o "$dsc" "$mirror/pool/main/a/abseil/$dsc" 2>/dev/null && break
  done
  [ -s "$dsc" ] || { echo "tsan.sh: cannot download $dsc from deb.debian.org" >&2; exit 1; }
  # The files the .dsc names, each checked against its SHA-256 there.
  awk '/^Checksums-Sha256:/ {on=1; next} /^[^ ]/ {on=0} on && NF == 3 {print $1, $3}' "$dsc" |
    while read -r sum file; do
      [ -f "$file" ] || curl -fsS -o "$file" "$mirror/pool/main/a/abseil/$file"
      echo "$sum  $file" | sha256sum -c --quiet - || { echo "tsan.sh: $file: checksum mismatch" >&2; exit 1; }
    done
  rm -rf "$absl/src" && mkdir -p "$absl/src"
  tar xzf "abseil_${upstream}.orig.tar.gz" -C "$absl/src" --strip-components=1
  tar xJf "abseil_${version}.debian.tar.xz" -C "$absl/src"
  cd "$absl/src"
  while read -r patch; do
    [ -z "$patch" ] || [ "${patch#\#}" != "$patch" ] || patch -p1 -s <"debian/patches/$patch"
  done <debian/patches/series
  cmp -s absl/base/options.h /usr/include/absl/base/options.h ||
    { echo "tsan.sh: this Abseil's options.h differs from the installed one's" >&2; exit 1; }
  cmake -S . -B "$absl/build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="-fsanitize=thread" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" \
    $(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache) >/dev/null
  cmake --build "$absl/build" -j"$jobs"
  rm -rf "$lib" && mkdir -p "$lib"
  find "$absl/build/absl" -name 'libabsl_*.so.*' -exec ln -sf {} "$lib/" \;
  touch "$lib/.built-$version"
  cd "$root"
fi
echo "tsan.sh: Abseil $version with TSan in $lib ($(( $(date +%s) - start )) s so far)"

# 2. The code without LibTorch, with TSan, and its tests. Every process's reports go to files
# (a daemon's would otherwise go to a log no test reads); any file left is a failure.
worker=""
[ "${TRAIND_TSAN_INTEGRATION:-0}" = 1 ] && worker=$root/build/bin/traind-worker
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Release -DTRAIND_TSAN=ON -DTRAIND_TSAN_ABSL_LIB="$lib" \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DTRAIND_WORKER="$worker" >/dev/null
cmake --build build-tsan -j"$jobs"
echo "tsan.sh: TSan build in $(( $(date +%s) - start )) s"
reports=$root/build-tsan/reports
rm -rf "$reports" && mkdir -p "$reports"
status=0
TSAN_OPTIONS="halt_on_error=0:second_deadlock_stack=1:suppressions=$root/tests/tsan/suppressions.txt:log_path=$reports/report" \
  ctest --test-dir build-tsan --output-on-failure -j"${TRAIND_TEST_JOBS:-2}" --timeout 900 || status=$?
if [ -n "$(ls "$reports")" ]; then
  echo "tsan.sh: ThreadSanitizer reports in $reports:"
  grep -h "^SUMMARY: ThreadSanitizer" "$reports"/* | sort | uniq -c
  [ $status != 0 ] || status=66
fi
echo "tsan.sh: TSan suite $([ $status = 0 ] && echo passed || echo "FAILED ($status)") in $(( $(date +%s) - start )) s; exit $status"
exit $status
