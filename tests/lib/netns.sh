# Two network namespaces joined by a veth pair, for the shell tests that need two machines'
# worth of network on one (tests/remote, tests/hosts). Sourced after tests/lib/checks.sh (skip)
# and once `work` exists.
#   netns_pair NS_A IP_A NS_B IP_B    makes them (IPs /24, links up) or skips, saying why
# The caller deletes them in its cleanup (`ip netns del`).
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
