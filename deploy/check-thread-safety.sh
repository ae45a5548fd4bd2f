#!/usr/bin/env bash
# Clang's lock-annotation analysis (-Wthread-safety -Werror=thread-safety) over the LibTorch code
# (engine/, models/, data/, worker/), which the normal build compiles with g++ and the sanitizer
# builds leave out. Syntax only (-fsyntax-only): nothing is linked. It checks each of those sources
# that can see an annotation: one that reaches, through the project's own headers, absl's
# synchronization headers or an ABSL_* lock annotation (the analysis cannot fire in the others).
# Uses the compile commands of a build directory (default build/; CMake writes them).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/compile_commands.json" ] || { echo "check-thread-safety: no $build/compile_commands.json: build first (deploy/build.sh)"; exit 1; }
command -v clang++ >/dev/null || { echo "check-thread-safety: clang++ not found (apt install clang)"; exit 1; }
commands=$(mktemp)
trap 'rm -f "$commands"' EXIT
python3 - "$build/compile_commands.json" "$PWD" > "$commands" <<'PY'
import json, os, re, shlex, sys
entries, root = json.load(open(sys.argv[1])), sys.argv[2]
include = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
annotated = re.compile(r'absl/synchronization/|absl/base/thread_annotations\.h|\bABSL_(GUARDED_BY|EXCLUSIVE_LOCKS_REQUIRED|SHARED_LOCKS_REQUIRED|LOCKS_EXCLUDED|LOCKABLE|SCOPED_LOCKABLE|PT_GUARDED_BY)')
seen = {}
def sees_annotations(path, stack=()):
    if path in seen: return seen[path]
    seen[path] = False  # include cycles end here
    try: text = open(path).read()
    except OSError: return False
    found = bool(annotated.search(text)) or any(
        sees_annotations(os.path.join(root, name)) for name in include.findall(text)
        if os.path.exists(os.path.join(root, name)))
    seen[path] = found
    return found
# A unity build's entry (CMAKE_UNITY_BUILD) compiles several sources through one generated file
# that includes them: each is checked on its own, with that entry's flags.
unity_member = re.compile(r'^#include "([^"]+\.cc)"', re.M)
for entry in entries:
    members = [entry['file']]
    if '/Unity/unity_' in entry['file']:
        members = unity_member.findall(open(entry['file']).read())
    for source in members:
        relative = os.path.relpath(source, root)
        if relative.split('/')[0] not in ('engine', 'models', 'data', 'worker') or not source.endswith('.cc'):
            continue
        if not sees_annotations(source): continue
        args = shlex.split(entry['command'])[1:]
        kept, skip = [], False
        for a in args:
            if skip: skip = False; continue
            if a in ('-o', '-include', '-c'): skip = a != '-c'; continue
            if a.startswith('-Winvalid-pch') or a.startswith('-O'): continue
            kept.append(source if a == entry['file'] else a)
        print(shlex.join(['clang++', *kept, '-fsyntax-only', '-Wthread-safety', '-Werror=thread-safety', '-Wno-unknown-warning-option']))
PY
count=$(wc -l < "$commands")
echo "check-thread-safety: clang -Wthread-safety over $count LibTorch sources that see lock annotations"
failed=0
xargs -P "${TRAIND_BUILD_JOBS:-2}" -I{} -d '\n' bash -c '{}' < "$commands" || failed=1
[ $failed = 0 ] && echo "check-thread-safety: passed" || echo "check-thread-safety: FAILED (above)"
exit $failed
