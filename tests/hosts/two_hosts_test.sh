#!/usr/bin/env bash
# One job on two traind hosts, end to end: traind "a" and traind "b" in two network namespaces
# joined by a veth pair, each with its own state directory, TLS and tokens; a is b's peer's
# coordinator (traind --peer b=...). Checks:
#   1. a 2-rank CPU LeNet5 job with --hosts a,b ends with the same weights on both ranks and the
#      same test accuracy as the same job run as 2 processes on one host;
#   2. bad --hosts requests are refused at submit, naming the field;
#   3. killing b's traind mid-job stops a's rank within 10 s, the job waits for b, and resumes
#      from its checkpoint when b is back; nothing stays reserved on b;
#   4. killing a's traind (the coordinator) mid-job stops b's rank within 10 s, and the job
#      resumes when a is back;
#   5. b dropping off the network mid-job stops a's rank within 10 s (keepalive) and b's when
#      a's call goes silent, and the job resumes when b is reachable again;
#   6. b shutting down cleanly (trainctl shutdown) counts as b going away: a's rank stops, the
#      job waits and resumes.
#   tests/hosts/two_hosts_test.sh BIN_DIR        (ctest runs it; exit 77 = skipped)
# Needs root (CAP_NET_ADMIN) and iproute2; skips with the reason where namespaces can't be made.
set -uo pipefail
bin=$(cd "${1:?usage: two_hosts_test.sh BIN_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/checks.sh
source "$(dirname "$0")/../lib/checks.sh"  # skip, pass, fail, expect
# shellcheck source=../lib/netns.sh
source "$(dirname "$0")/../lib/netns.sh"   # netns_pair

command -v openssl >/dev/null || skip "no openssl"

tag=trh$$
ns_a=${tag}a ns_b=${tag}b
ip_a=10.98.0.1 ip_b=10.98.0.2 port=50051
work=$(mktemp -d /tmp/traind-hosts.XXXXXX)
cleanup() {
  netns_remove "$ns_a" "$ns_b"  # both traind, their workers and launchers, whatever state they are in
  rm -rf "$work"
}
trap cleanup EXIT
netns_pair "$ns_a" "$ip_a" "$ns_b" "$ip_b"

"$src/deploy/make-certs.sh" -o "$work/certs" --no-localhost traind.test "$ip_a" "$ip_b" \
  >"$work/certs.log" 2>&1 || { cat "$work/certs.log"; echo "FAIL - make-certs.sh"; exit 1; }
certs=$work/certs

# Each host: TLS on its namespace's address (for the other host), and a Unix socket for the
# test's trainctl. a knows b as a peer; a checkpoint every 3 s gives the fault checks something
# to resume from; a host that is gone is retried for at most 2 minutes.
# a reaches b with the --peer-tls-* flags at first, and through a trainctl context (which names
# address, TLS files and token) when it is restarted: both ways are exercised.
peer_b=(--peer "b=$ip_b:$port" --peer-tls-ca "$certs/ca.pem" --peer-tls-cert "$certs/client.pem"
        --peer-tls-key "$certs/client.key" --peer-token-file "$certs/token")
start_host() {
  local host=$1
  local ns=$ns_a ip=$ip_a extra=("${peer_b[@]}" --checkpoint-minutes 0.05 --host-wait 2)
  if [ "$host" = b ]; then ns=$ns_b ip=$ip_b extra=(); fi
  rm -f "$work/$host.sock"
  ip netns exec "$ns" env XDG_CONFIG_HOME="$work/config" "$bin/traind" --name "$host" --state-dir "$work/$host" \
    --listen "$ip:$port" --listen "unix:$work/$host.sock" --warm-workers 0 --enable-fault-injection \
    --tls-cert "$certs/server.pem" --tls-key "$certs/server.key" \
    --tls-client-ca "$certs/ca.pem" --token-file "$certs/tokens.txt" "${extra[@]}" \
    >>"$work/$host.log" 2>&1 &
  echo $! >"$work/$host.pid"
  for _ in $(seq 1 150); do [ -S "$work/$host.sock" ] && return 0; sleep 0.1; done
  echo "traind $host did not start:"; tail -5 "$work/$host.log"; return 1
}
on_a() { "$bin/trainctl" --addr "unix:$work/a.sock" "$@"; }
on_b() { "$bin/trainctl" --addr "unix:$work/b.sock" "$@"; }
field() { grep -o "\"$2\": *[^,}]*" <<<"$1" | head -1 | sed 's/.*: *//; s/"//g'; }
state_of() { field "$(on_a show "$1" --output json)" state; }
accuracy_of() { field "$(on_a show "$1" --output json)" testAccuracy; }
digests_of() { on_a logs "$1" | grep -Eo "sha256 by rank: 0 [0-9a-f]{16}, 1 [0-9a-f]{16}" | tail -1; }
logs_have() { on_a logs "$1" | grep -Eq "$2"; }
wait_until() {  # SECONDS COMMAND...: until COMMAND succeeds; false on timeout
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -ge $deadline ] && return 1; sleep 0.2; done
}
# The pid of a traind-worker whose parent is $1 (directly, or through traind-hosts).
rank_under() {
  local parent=$1 launcher
  launcher=$(pgrep -P "$parent" -f traind-hosts | head -1)
  pgrep -P "${launcher:-$parent}" -f traind-worker | head -1
}
# Seconds (to 0.1) until process $1 is gone, or 99 if it outlives $2 seconds.
seconds_until_gone() {
  local pid=$1 limit=$2 start now
  start=$(date +%s.%N)
  while kill -0 "$pid" 2>/dev/null; do
    now=$(date +%s.%N)
    if awk -v a="$start" -v b="$now" -v l="$limit" 'BEGIN{exit !(b-a > l)}'; then echo 99; return; fi
    sleep 0.1
  done
  now=$(date +%s.%N)
  awk -v a="$start" -v b="$now" 'BEGIN{printf "%.1f", b-a}'
}

start_host a || exit 1
start_host b || exit 1

# 1. The same 2-rank job on one host and on two.
small=(--model lenet5 --dataset fashion-mnist --device cpu --epochs 1 --limit-train 6000
       --limit-test 1000)
expect 0 "a 2-process job on one host (the reference)" "Test accuracy" -- \
  on_a submit "${small[@]}" --processes 2 --watch
one_host=$(on_a list --output json | grep -o '"id": *"*[0-9]*' | sed 's/.*: *//; s/"//g' | sort -n | tail -1)
expect 0 "the same job with --hosts a,b" "Test accuracy" -- on_a submit "${small[@]}" --hosts a,b --watch
two_hosts=$((one_host + 1))
[ "$(state_of "$two_hosts")" = SUCCEEDED ] && pass "the two-host job SUCCEEDED" \
  || fail "the two-host job ended $(state_of "$two_hosts")"
on_a logs "$two_hosts" >"$work/two.log"
grep -q "Started 2 ranks on 2 hosts (a, b; rendezvous at $ip_a:" "$work/two.log" \
  && pass "rank 0 ran on a, rank 1 on b, rendezvous at a's address" \
  || { fail "the job's log says where its ranks ran"; grep -m3 "Started" "$work/two.log"; }
grep -q "running ranks 1 to 1 of job $two_hosts of a" "$work/b.log" \
  && pass "b's traind ran rank 1" || fail "b's log lacks its rank"
d=$(digests_of "$two_hosts")
if [[ $d =~ 0\ ([0-9a-f]+),\ 1\ ([0-9a-f]+) ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]; then
  pass "both ranks end with the same weights ($d)"
else
  fail "both ranks end with the same weights: '$d'"
fi
a1=$(accuracy_of "$one_host") a2=$(accuracy_of "$two_hosts")
[ -n "$a1" ] && [ "$a1" = "$a2" ] && pass "the same test accuracy as on one host ($a1)" \
  || fail "test accuracy: one host $a1, two hosts $a2"
[ "$(digests_of "$one_host" | awk '{print $5}')" = "$(digests_of "$two_hosts" | awk '{print $5}')" ] \
  && pass "and the same weights as on one host" \
  || fail "weights differ from one host's: $(digests_of "$one_host") vs $d"

# 2. Refused at submit, naming the field.
expect 2 "a host that is not a peer" "hosts: 'c' is not a peer" -- on_a submit "${small[@]}" --hosts a,c
expect 2 "hosts without this traind" "hosts: must include this traind, 'a'" -- \
  on_a submit "${small[@]}" --hosts b,c
expect 2 "ranks that do not spread evenly" "processes: 3 ranks do not spread evenly" -- \
  on_a submit "${small[@]}" --hosts a,b --processes 3
expect 2 "--nodes beyond this traind and its peers" "nodes: 1 to 2" -- on_a submit "${small[@]}" --nodes 3
expect 2 "an upload cannot go to several hosts yet" "model_file: not with hosts" -- \
  on_a submit --model torchscript --model-file "sha256:$(printf 'x%.0s' {1..64} | tr x 0)" \
  --dataset fashion-mnist --device cpu --hosts a,b

# 3. b's traind dies mid-job.
# The faults below need the job still running when the test looks, on any machine: each step
# sleeps 80 ms first (debug.step_delay_ms), so its 2 x 94 steps a rank take at least 15 s however
# fast the CPU, and the first checkpoint comes after 3 s.
echo '{"debug": {"stepDelayMs": 80}}' >"$work/slow.json"
long=("$work/slow.json" --model lenet5 --dataset fashion-mnist --device cpu --epochs 2
      --limit-train 12000 --limit-test 1000)
# Submits the long job with "$@" (--hosts a,b or --nodes 2) into $job and waits for its first
# checkpoint, so that a fault afterwards has something to resume from.
start_long_job() {
  job=$(on_a submit "${long[@]}" "$@")
  wait_until 120 test -f "$work/a/jobs/$job/checkpoint.pt" || fail "job $job: no checkpoint within 2 minutes"
}
start_long_job --nodes 2
rank0=$(rank_under "$(cat "$work/a.pid")") rank1=$(rank_under "$(cat "$work/b.pid")")
if [ -z "$rank0" ] || [ -z "$rank1" ]; then
  fail "both ranks running (a: '$rank0', b: '$rank1')"
else
  kill -9 "$(cat "$work/b.pid")"
  t0=$(seconds_until_gone "$rank0" 10)
  [ "$t0" != 99 ] && pass "b's traind killed: a's rank stopped ${t0} s later (≤ 10 s)" \
    || fail "a's rank still runs 10 s after b's traind was killed"
  t1=$(seconds_until_gone "$rank1" 10)
  [ "$t1" != 99 ] && pass "and b's own rank stopped too (${t1} s)" || fail "b's rank outlived its traind by 10 s"
fi
wait_until 15 logs_have "$job" "host b went away while the job ran" \
  && pass "the job's log says host b went away" || fail "the job's log names the lost host"
waiting() { on_a logs "$job" --output json | grep -o '"reason": *"[^"]*trying again in[^"]*"' | head -1; }
is_waiting() { [ -n "$(waiting)" ]; }
wait_until 15 is_waiting && pass "the job waits for b: $(waiting)" \
  || { fail "the job does not wait for b"; on_a logs "$job" --output json | tail -3; }
sleep 5  # a retry or two while b is away, each refused (UNAVAILABLE)
logs_have "$job" "host b: UNAVAILABLE" && pass "retries meanwhile find b unreachable" \
  || fail "no retry found b unreachable"
start_host b || exit 1
expect 0 "b back: the job resumes and succeeds" "Resumed from the checkpoint" -- \
  timeout 300 "$bin/trainctl" --addr "unix:$work/a.sock" watch "$job"
[ "$(state_of "$job")" = SUCCEEDED ] && pass "job $job SUCCEEDED" || fail "job $job ended $(state_of "$job")"
expect 0 "nothing is left reserved on b: a job of its own runs there" "Test accuracy" -- \
  timeout 120 "$bin/trainctl" --addr "unix:$work/b.sock" submit "${small[@]}" --watch

# 4. The coordinator's traind dies mid-job.
start_long_job --hosts a,b
rank1=$(rank_under "$(cat "$work/b.pid")")
if [ -z "$rank1" ]; then
  fail "b's rank running"
else
  kill -9 "$(cat "$work/a.pid")"
  t1=$(seconds_until_gone "$rank1" 10)
  [ "$t1" != 99 ] && pass "a's traind killed: b's rank stopped ${t1} s later (≤ 10 s)" \
    || fail "b's rank still runs 10 s after the coordinator was killed"
fi
XDG_CONFIG_HOME="$work/config" "$bin/trainctl" context add lab-b --addr "$ip_b:$port" \
  --tls-ca "$certs/ca.pem" --tls-cert "$certs/client.pem" --tls-key "$certs/client.key" \
  --token-file "$certs/token" >/dev/null || fail "trainctl context add lab-b"
peer_b=(--peer b=context:lab-b)  # from now on a reaches b through the context
start_host a || exit 1
expect 0 "a back (b now named by a context): the job resumes and succeeds" "Resumed from the checkpoint" -- \
  timeout 300 "$bin/trainctl" --addr "unix:$work/a.sock" watch "$job"
[ "$(state_of "$job")" = SUCCEEDED ] && pass "job $job SUCCEEDED" || fail "job $job ended $(state_of "$job")"

# 5. b drops off the network mid-job (its link goes down; both traind keep running).
start_long_job --hosts a,b
rank0=$(rank_under "$(cat "$work/a.pid")") rank1=$(rank_under "$(cat "$work/b.pid")")
if [ -z "$rank0" ] || [ -z "$rank1" ]; then
  fail "both ranks running (a: '$rank0', b: '$rank1')"
else
  ip -n "$ns_b" link set "${ns_b}v" down
  t0=$(seconds_until_gone "$rank0" 10)
  [ "$t0" != 99 ] && pass "b's link down: a's rank stopped ${t0} s later (≤ 10 s)" \
    || fail "a's rank still runs 10 s after b dropped off the network"
  t1=$(seconds_until_gone "$rank1" 30)
  [ "$t1" != 99 ] && pass "and b stopped its rank when a's call went silent (${t1} s)" \
    || fail "b's rank still runs 30 s after its coordinator went silent"
  ip -n "$ns_b" link set "${ns_b}v" up
fi
expect 0 "b reachable again: the job resumes and succeeds" "Resumed from the checkpoint" -- \
  timeout 300 "$bin/trainctl" --addr "unix:$work/a.sock" watch "$job"
[ "$(state_of "$job")" = SUCCEEDED ] && pass "job $job SUCCEEDED" || fail "job $job ended $(state_of "$job")"

# 6. b's traind shuts down cleanly mid-job (trainctl shutdown): its calls are cancelled from b's
# side, which is a host going away too, not a cancel from a.
start_long_job --hosts a,b
rank0=$(rank_under "$(cat "$work/a.pid")")
if [ -z "$rank0" ]; then
  fail "a's rank running"
else
  on_b shutdown >/dev/null 2>&1 &
  shutdown_pid=$!
  t0=$(seconds_until_gone "$rank0" 10)
  [ "$t0" != 99 ] && pass "b shut down: a's rank stopped ${t0} s later (≤ 10 s)" \
    || fail "a's rank still runs 10 s after b shut down"
  wait "$shutdown_pid"
fi
wait_until 20 logs_have "$job" "host b went away" && pass "and the job waits for b" \
  || fail "the job does not wait for b after b's shutdown"
start_host b || exit 1
expect 0 "b back: the job resumes and succeeds" "Resumed from the checkpoint" -- \
  timeout 300 "$bin/trainctl" --addr "unix:$work/a.sock" watch "$job"

if [ "$failures" != 0 ]; then
  echo "--- a's traind log (tail)"; tail -20 "$work/a.log"
  echo "--- b's traind log (tail)"; tail -20 "$work/b.log"
fi
echo "$failures failure(s)"
[ "$failures" = 0 ]
