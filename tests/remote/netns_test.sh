#!/usr/bin/env bash
# Remote access end to end: traind in a "server" network namespace, trainctl and the Python
# example in a "laptop" one, joined by a veth pair — so every call crosses a real network
# interface with TLS and bearer tokens, as it would from another machine.
#   tests/remote/netns_test.sh BIN_DIR        (ctest runs it; exit 77 = skipped)
# Needs root (CAP_NET_ADMIN) and iproute2; skips with the reason where namespaces can't be made.
set -uo pipefail
bin=$(cd "${1:?usage: netns_test.sh BIN_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/checks.sh
source "$(dirname "$0")/../lib/checks.sh"  # skip, pass, fail, expect
# shellcheck source=../lib/netns.sh
source "$(dirname "$0")/../lib/netns.sh"   # netns_pair

command -v openssl >/dev/null || skip "no openssl"

tag=trn$$
server_ns=${tag}s laptop_ns=${tag}l
server_ip=10.99.0.1 laptop_ip=10.99.0.2 port=50051
work=$(mktemp -d /tmp/traind-netns.XXXXXX)
cleanup() {
  netns_remove "$server_ns" "$laptop_ns"
  rm -rf "$work"
}
trap cleanup EXIT
netns_pair "$server_ns" "$server_ip" "$laptop_ns" "$laptop_ip"

on_server() { ip netns exec "$server_ns" "$@"; }
on_laptop() { ip netns exec "$laptop_ns" env HOME="$work/home" XDG_CONFIG_HOME= "$@"; }

# Certificates for the server's name and address, and a CA nobody should trust.
"$src/deploy/make-certs.sh" -o "$work/certs" --no-localhost traind.test "$server_ip" >"$work/certs.log" 2>&1 \
  || { cat "$work/certs.log"; echo "FAIL - make-certs.sh"; exit 1; }
"$src/deploy/make-certs.sh" -o "$work/other" other.test >/dev/null 2>&1 || { echo "FAIL - second CA"; exit 1; }
certs=$work/certs
grep -q -- "--tls-cert $certs/server.pem\|--tls-cert '$certs/server.pem'" "$work/certs.log" \
  && pass "make-certs.sh prints the traind command" || fail "make-certs.sh prints the traind command"

expect 1 "plaintext TCP on a non-loopback address is refused at start" "needs TLS" -- \
  on_server "$bin/traind" --state-dir "$work/refused" --listen "$server_ip:$port"

# A second person, with a user token: manages only their own jobs.
user_token=$(openssl rand -hex 24)
echo "$user_token bob user" >>"$certs/tokens.txt"
echo "$user_token" >"$work/bob-token"

# Not through on_server: $! must be traind itself (ip netns exec execs it), for the cleanup.
ip netns exec "$server_ns" "$bin/traind" --state-dir "$work/state" --listen "$server_ip:$port" \
  --tls-cert "$certs/server.pem" --tls-key "$certs/server.key" --tls-client-ca "$certs/ca.pem" \
  --token-file "$certs/tokens.txt" --max-queued-per-token 2 >"$work/traind.log" 2>&1 &
echo $! >"$work/traind.pid"

tls=(--addr "$server_ip:$port" --tls-ca "$certs/ca.pem" --tls-cert "$certs/client.pem"
     --tls-key "$certs/client.key")
auth=("${tls[@]}" --token-file "$certs/token")
for _ in $(seq 1 100); do on_laptop "$bin/trainctl" "${auth[@]}" devices >/dev/null 2>&1 && break; sleep 0.2; done

expect 0 "devices over TLS with a token" "cpu" -- on_laptop "$bin/trainctl" "${auth[@]}" devices
small=(--model lenet5 --dataset fashion-mnist --epochs 1 --limit-train 2000 --limit-test 500)
id=$(on_laptop "$bin/trainctl" "${auth[@]}" submit "${small[@]}" 2>"$work/submit.err")
[ -n "$id" ] && pass "submit over TLS with a token: job $id" || { fail "submit: $(cat "$work/submit.err")"; id=0; }
expect 0 "watch over TLS with a token" "Test accuracy" -- on_laptop "$bin/trainctl" "${auth[@]}" watch "$id"
expect 0 "the job records which token submitted it" '"owner": "admin"' -- \
  on_laptop "$bin/trainctl" "${auth[@]}" show "$id" --output json
expect 0 "artifacts over TLS with a token" "state_dict" -- \
  on_laptop "$bin/trainctl" "${auth[@]}" artifacts "$id"
expect 0 "download over TLS with a token, checked against its SHA-256" "best of job $id" -- \
  on_laptop "$bin/trainctl" "${auth[@]}" download "$id" -o "$work/remote-best.pt"
expect 0 "an upload over TLS with a token" "sha256:" -- \
  on_laptop "$bin/trainctl" "${auth[@]}" upload "$work/remote-best.pt"
expect 3 "a download without a token is UNAUTHENTICATED" "no bearer token" -- \
  on_laptop "$bin/trainctl" "${tls[@]}" download "$id" -o "$work/other-best.pt"

bob=("${tls[@]}" --token-file "$work/bob-token")
expect 3 "a user token cannot read another token's job (PERMISSION_DENIED)" "is not yours" -- \
  on_laptop "$bin/trainctl" "${bob[@]}" show "$id"
expect 3 "a user token cannot pause the queue" "needs an admin token" -- \
  on_laptop "$bin/trainctl" "${bob[@]}" pause
if on_laptop "$bin/trainctl" "${bob[@]}" list 2>&1 | grep -q "^$id "; then
  fail "a user token lists only its own jobs"
else
  pass "a user token lists only its own jobs"
fi

echo "wrong-token-0123456789abcdef" >"$work/wrong-token"
expect 3 "a wrong token is UNAUTHENTICATED (exit 3)" "wrong bearer token" -- \
  on_laptop "$bin/trainctl" "${tls[@]}" --token-file "$work/wrong-token" list
expect 3 "a missing token is UNAUTHENTICATED (exit 3)" "no bearer token" -- \
  on_laptop "$bin/trainctl" "${tls[@]}" watch "$id"
grep -q "refused a call from ipv4:$laptop_ip" "$work/traind.log" \
  && pass "failed authentication logged with the peer address" \
  || fail "failed authentication logged with the peer address"
expect 3 "a plaintext client is refused" "cannot reach" -- \
  on_laptop "$bin/trainctl" --addr "$server_ip:$port" --plaintext --token-file "$certs/token" list
expect 3 "a client that does not trust the CA is refused" "cannot reach" -- \
  on_laptop "$bin/trainctl" --addr "$server_ip:$port" --tls-ca "$work/other/ca.pem" \
  --tls-cert "$certs/client.pem" --tls-key "$certs/client.key" --token-file "$certs/token" list
expect 3 "a client without a client certificate is refused" "cannot reach" -- \
  on_laptop "$bin/trainctl" --addr "$server_ip:$port" --tls-ca "$certs/ca.pem" \
  --token-file "$certs/token" list
mkdir -p "$work/elsewhere"
expect 2 "a dataset outside the data roots is INVALID_ARGUMENT (exit 2)" "outside the daemon's data roots" -- \
  on_laptop "$bin/trainctl" "${auth[@]}" submit --model lenet5 --dataset fashion-mnist \
  --data-dir "$work/elsewhere"
expect 2 "a .. escape is INVALID_ARGUMENT" "outside the daemon's data roots" -- \
  on_laptop "$bin/trainctl" "${auth[@]}" submit --model lenet5 --dataset fashion-mnist \
  --data-dir "/usr/share/datasets/fashion-mnist/../../../../tmp"

# Limits: two queued jobs per token (traind --max-queued-per-token 2).
on_laptop "$bin/trainctl" "${auth[@]}" pause >/dev/null
q1=$(on_laptop "$bin/trainctl" "${auth[@]}" submit "${small[@]}")
q2=$(on_laptop "$bin/trainctl" "${auth[@]}" submit "${small[@]}")
expect 1 "a third queued job is RESOURCE_EXHAUSTED" "limit is 2" -- \
  on_laptop "$bin/trainctl" "${auth[@]}" submit "${small[@]}"
on_laptop "$bin/trainctl" "${auth[@]}" cancel "$q1" "$q2" >/dev/null
on_laptop "$bin/trainctl" "${auth[@]}" resume >/dev/null

# The same connection from TRAINCTL_* variables, then from a named context.
expect 0 "TRAINCTL_* variables" "$id" -- on_laptop env TRAINCTL_ADDR="$server_ip:$port" \
  TRAINCTL_TLS_CA="$certs/ca.pem" TRAINCTL_TLS_CERT="$certs/client.pem" \
  TRAINCTL_TLS_KEY="$certs/client.key" TRAINCTL_TOKEN_FILE="$certs/token" "$bin/trainctl" list
expect 0 "context add" "saved" -- on_laptop "$bin/trainctl" context add lab "${auth[@]}"
expect 0 "context list marks the current one" "^\* lab" -- on_laptop "$bin/trainctl" context list
expect 0 "trainctl --context lab watch ID" "Test accuracy" -- \
  on_laptop "$bin/trainctl" --context lab watch "$id"
expect 0 "the current context applies without flags" "$id" -- on_laptop "$bin/trainctl" list
expect 2 "an unknown context is a usage error" "no context named 'nope'" -- \
  on_laptop "$bin/trainctl" --context nope list
expect 0 "context remove" "removed" -- on_laptop "$bin/trainctl" context remove lab

# A second language: the Python example, through the traind package's client (its code generated
# from proto/ by the build, beside the binaries), submits and streams.
if /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null; then
  package=$(cd "$bin/../python" && pwd)
  expect 0 "the Python example submits and streams over TLS" "SUCCEEDED" -- \
    on_laptop env TRAIND_PYTHON_PACKAGE="$package" /usr/bin/python3 "$src/examples/python/submit_and_watch.py" \
    "${auth[@]}" --model mlp --dataset fashion-mnist --epochs 1 --limit-train 2000 --limit-test 500
  expect 3 "the Python example with a wrong token gets UNAUTHENTICATED" "UNAUTHENTICATED" -- \
    on_laptop env TRAIND_PYTHON_PACKAGE="$package" /usr/bin/python3 "$src/examples/python/submit_and_watch.py" \
    "${tls[@]}" --token-file "$work/wrong-token" --model mlp --epochs 1
else
  fail "the Python example: /usr/bin/python3 lacks grpc (deploy/install-deps.sh --for python installs python3-grpcio)"
fi

echo "$failures failure(s)"
[ "$failures" = 0 ]
