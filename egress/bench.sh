#!/usr/bin/env bash
# mcpgate-egress beside tinyproxy and squid (Debian packages), side by side,
# on a veth pair between two network namespaces of its own (nothing leaves
# the machine). Each proxy relays CONNECT tunnels to the same upstream:
#   - throughput: one tunnel carrying MIB MiB (default 512) downstream;
#   - round trips: N (default 300) fresh CONNECT + request + answer, in turn;
#   - memory: the proxy's RSS with T (default 200) idle tunnels open, and
#     the growth per tunnel over the idle proxy.
# Usage (root): egress/bench.sh [MIB [N [T]]]; EGRESS names the binary
# (default ./mcpgate-egress, the static release). A proxy that is not
# installed is left out of the table.
set -u
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (network namespaces)" >&2; exit 77; }
egress=$(realpath "${EGRESS:-./mcpgate-egress}")
[ -x "$egress" ] || { echo "bench: $egress is not built (make mcpgate-egress)" >&2; exit 1; }
px=egb-px-$$ up=egb-up-$$ va=ebp$$ vb=ebu$$
tmp=$(mktemp -d)
chmod 755 "$tmp"
up_pid=
cleanup() {
	[ -n "$up_pid" ] && kill "$up_pid" 2>/dev/null && wait "$up_pid" 2>/dev/null
	ip netns del "$px" 2>/dev/null
	ip netns del "$up" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
set -e
ip netns add "$px"
ip netns add "$up"
ip link add "$va" type veth peer name "$vb"
ip link set "$va" netns "$px"
ip link set "$vb" netns "$up"
ip -n "$px" link set lo up
ip -n "$up" link set lo up
ip -n "$px" addr add 10.233.0.1/29 dev "$va"
ip -n "$up" addr add 10.233.0.2/29 dev "$vb"
ip -n "$px" link set "$va" up
ip -n "$up" link set "$vb" up
set +e

ip netns exec "$up" python3 egress/bench_driver.py upstream "$tmp" &
up_pid=$!
for _ in $(seq 100); do
	[ -e "$tmp/ready" ] && break
	sleep 0.05
done
ip netns exec "$px" python3 egress/bench_driver.py client "$tmp" "$egress" "${1:-512}" "${2:-300}" "${3:-200}"
