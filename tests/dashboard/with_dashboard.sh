#!/usr/bin/env bash
# Runs a command against a fresh traind serving its dashboard on a free loopback port: a private
# state directory (XDG_STATE_HOME, which traind and trainctl both read), the build's binaries first
# on PATH, traind stopped afterwards. The command gets
#   TRAIND_DASHBOARD_URL        e.g. http://127.0.0.1:41234
#   TRAIND_DASHBOARD_LOGIN_URL  traind's one-time login link
#   TRAIND_HTTP_TOKEN_FILE      the local user's API token (Authorization: Bearer)
#   tests/dashboard/with_dashboard.sh BIN_DIR COMMAND...
set -euo pipefail
bin=$1
shift
state=$(mktemp -d /tmp/traind-dashboard-test.XXXXXX)
export XDG_STATE_HOME=$state
export PATH=$bin:$PATH
# The log exists before traind starts: the loop below reads it at once, and the background
# process's redirection may not have created it yet (a race that failed this script under load).
: >"$state/traind.log"
"$bin/traind" --http 127.0.0.1:0 --data-root /tmp >>"$state/traind.log" 2>&1 &
traind_pid=$!
cleanup() {
  kill "$traind_pid" 2>/dev/null || true
  wait "$traind_pid" 2>/dev/null || true
  rm -rf "$state"
}
trap cleanup EXIT
login=""
for _ in $(seq 300); do
  login=$(sed -n 's/^traind: dashboard: \(http[^ ]*\)$/\1/p' "$state/traind.log")
  [ -n "$login" ] && break
  kill -0 "$traind_pid" 2>/dev/null || { cat "$state/traind.log"; exit 1; }
  sleep 0.1
done
[ -n "$login" ] || { echo "traind printed no dashboard link"; cat "$state/traind.log"; exit 1; }
export TRAIND_DASHBOARD_LOGIN_URL=$login
export TRAIND_DASHBOARD_URL=${login%%/login*}
export TRAIND_HTTP_TOKEN_FILE=$state/traind/http.token
status=0
"$@" || status=$?
[ $status = 0 ] || [ $status = 77 ] || { echo "--- traind's log"; tail -30 "$state/traind.log"; }
exit $status
