#!/usr/bin/env bash
# mcpgate-egress against the cases in testdata/egress/, with a real upstream.
#
# Makes two network namespaces joined by a veth pair: the proxy's
# (10.233.0.1/29, fd00:233::1/64) and the upstream's (10.233.0.2/29,
# fd00:233::2/64), so the upstream has a non-loopback address of the test's
# own and no packet leaves the machine. The driver runs in the proxy's
# namespace with its own mount namespace, where /etc/hosts names the upstream
# (upstream.test and a few traps) and /etc/resolv.conf points at a fake DNS
# server on 127.0.0.1 that records every name it is asked.
#
# Needs root and iproute2; otherwise it reports skipped (exit 77).
# $EGRESS names the binary (default: mcpgate-egress beside $MCPGATE, else
# build/san/mcpgate-egress). EGRESS_WRAPPER="valgrind ..." runs it under a
# tool; EGRESS_CASES='0*' picks cases; EGRESS_CHECKS='churn' picks the
# scripted checks (scripted, reset, churn) that follow them.
set -u
cd "$(dirname "$0")/.."
egress=${EGRESS:-}
if [ -z "$egress" ]; then
	if [ -n "${MCPGATE:-}" ]; then
		egress=$(dirname "$MCPGATE")/mcpgate-egress
	else
		egress=build/san/mcpgate-egress
	fi
fi

skip() {
	echo "ok 1 # SKIP $1"
	echo "0 passed, 0 failed"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
command -v ip >/dev/null 2>&1 || skip "needs iproute2 (ip netns)"
command -v unshare >/dev/null 2>&1 || skip "needs unshare"
command -v python3 >/dev/null 2>&1 || skip "needs python3"
if [ ! -x "$egress" ]; then
	echo "not ok 1 - $egress is not built"
	echo "0 passed, 1 failed"
	exit 1
fi
egress=$(cd "$(dirname "$egress")" && pwd)/$(basename "$egress")

px=egr-px-$$
up=egr-up-$$
va=egp$$
vb=egu$$
tmp=$(mktemp -d)
up_pid=

cleanup() {
	[ -n "$up_pid" ] && kill "$up_pid" 2>/dev/null && wait "$up_pid" 2>/dev/null
	ip netns del "$px" 2>/dev/null
	ip netns del "$up" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$px" 2>/dev/null || skip "ip netns add failed (no network namespaces here)"
ip netns add "$up" || exit 1
set -e
ip link add "$va" type veth peer name "$vb"
ip link set "$va" netns "$px"
ip link set "$vb" netns "$up"
ip -n "$px" link set lo up
ip -n "$up" link set lo up
ip -n "$px" addr add 10.233.0.1/29 dev "$va"
ip -n "$up" addr add 10.233.0.2/29 dev "$vb"
ip -n "$px" -6 addr add fd00:233::1/64 dev "$va" nodad
ip -n "$up" -6 addr add fd00:233::2/64 dev "$vb" nodad
ip -n "$px" link set "$va" up
ip -n "$up" link set "$vb" up
set +e

mkdir -p "$tmp/up"
cat >"$tmp/hosts" <<'EOF'
127.0.0.1 localhost
10.233.0.2 upstream.test
fd00:233::2 v6.test
10.233.0.2 mixed.test
127.0.0.1 mixed.test
10.233.0.1 self.test
169.254.169.254 metadata.test
10.233.0.5 blackhole.test
10.233.0.2 a.wild.test
10.233.0.2 wild.test
10.233.0.2 b.a.wild.test
10.233.0.2 badwild.test
10.233.0.2 a.wild.test.evil.test
127.0.0.1 loop.wild.test
169.254.169.254 meta.wild.test
10.233.0.1 self.wild.test
EOF
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$tmp/resolv.conf"

ip netns exec "$up" python3 egress/cases_upstream.py "$tmp/up" 10.233.0.2,fd00:233::2 \
	80,443,8080,8443 &
up_pid=$!
for _ in $(seq 100); do
	[ -e "$tmp/up/ready" ] && break
	sleep 0.05
done
[ -e "$tmp/up/ready" ] || { echo "not ok 1 - the upstream did not start"; echo "0 passed, 1 failed"; exit 1; }

# the proxy's namespace, with a mount namespace of its own for /etc/hosts
# shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
ip netns exec "$px" unshare -m --propagation private sh -c '
	mount --bind "$1/hosts" /etc/hosts &&
	mount --bind "$1/resolv.conf" /etc/resolv.conf &&
	exec python3 egress/cases_driver.py "$2" testdata/egress "$1/up"' sh "$tmp" "$egress"
