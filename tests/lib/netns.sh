# Two network namespaces joined by a veth pair, for the shell tests that need two machines'
# worth of network on one (tests/remote, tests/hosts). Sourced after tests/lib/checks.sh (skip)
# and once `work` exists.
#   netns_pair NS_A IP_A NS_B IP_B    makes them (IPs /24, links up) or skips, saying why
#   netns_remove NS...                 kills every process inside them, then deletes them
# The caller calls netns_remove in its EXIT trap, so nothing it started outlives it, whether the
# test passed or failed (a pid file can be stale or overwritten; a namespace's process list is not).
netns_pair() {
  local ns_a=$1 ip_a=$2 ns_b=$3 ip_b=$4
  command -v ip >/dev/null || skip "no ip command (Debian: iproute2)"
  ip netns add "$ns_a" 2>"$work/ns.err" || skip "cannot create network namespaces here: $(cat "$work/ns.err")"
  ip netns add "$ns_b" || skip "cannot create a second network namespace"
  # `ip netns exec` remounts / and /sys; in a chroot or container whose / is not a mount point it
  # cannot, and every check would fail for that reason alone.
  ip netns exec "$ns_a" true 2>"$work/exec.err" \
    || skip "ip netns exec does not work here (a chroot or container whose / is not a mount point?): $(head -1 "$work/exec.err")"
  ip link add "${ns_a}v" netns "$ns_a" type veth peer name "${ns_b}v" netns "$ns_b" \
    || skip "cannot create a veth pair"
  ip -n "$ns_a" addr add "$ip_a/24" dev "${ns_a}v"
  ip -n "$ns_b" addr add "$ip_b/24" dev "${ns_b}v"
  local ns
  for ns in "$ns_a" "$ns_b"; do
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "${ns}v" up
  done
}

# Every process inside the namespaces (traind, its workers, launchers, ranks: all were started
# under `ip netns exec` or by one that was) gets SIGTERM, then SIGKILL after 5 s; then the
# namespaces go. Safe to call for namespaces that were never made.
netns_remove() {
  local ns pids deadline=$((SECONDS + 5))
  for ns in "$@"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null
  done
  for ns in "$@"; do
    while pids=$(ip netns pids "$ns" 2>/dev/null) && [ -n "$pids" ] && [ $SECONDS -lt $deadline ]; do
      sleep 0.1
    done
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
  done
  for ns in "$@"; do  # SIGKILL ends anything not stuck in the kernel: 10 s at most, to be safe
    deadline=$((SECONDS + 10))
    while [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
    ip netns del "$ns" 2>/dev/null
  done
}
