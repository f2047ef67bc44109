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

traps4="168.63.129.16 100.100.100.200 100.100.100.100 100.64.0.2 192.31.196.1 192.52.193.1 192.175.48.1"
traps6="fd00:ec2::254 fd00:ec2::253 fd00:ec2::123 fd00:ec2::23 fd20:ce::254 fd00:c1::a9fe:a9fe
fd00:a9fe:a9fe::1 fd00:42::42 fd00:100::100:200 2001:2::1 2001:20::1 3fff::1 2001:1::1 2001:3::1
2001:4:112::1 2001:10::1 2001:30::1 2620:4f:8000::1"

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
# addresses the proxy must never reach (a platform's, a special-purpose
# range's) and the shared address space it reaches with -allow-private: the
# upstream answers on them too, routed to it from the proxy's namespace, so
# a proxy that let one through is seen connecting, not failing to
for a in $traps4; do
	ip -n "$up" addr add "$a/32" dev lo
	ip -n "$px" route add "$a/32" via 10.233.0.2 dev "$va"
done
for a in $traps6; do
	ip -n "$up" -6 addr add "$a/128" dev lo nodad
	ip -n "$px" -6 route add "$a/128" via fd00:233::2 dev "$va"
done
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
168.63.129.16 azure-wireserver.test
::ffff:168.63.129.16 azure-wireserver-mapped.test
fd00:ec2::254 aws-metadata-v6.test
fd00:ec2::253 aws-dns-v6.test
fd00:ec2::123 aws-time-v6.test
fd00:ec2::23 eks-pod-identity-v6.test
169.254.169.253 aws-dns.test
169.254.169.123 aws-time.test
169.254.170.2 ecs-task.test
169.254.170.23 eks-pod-identity.test
169.254.169.252 gke-metadata.test
fd20:ce::254 gcp-metadata-v6.test
fd00:c1::a9fe:a9fe oracle-metadata-v6.test
192.0.0.192 oracle-classic-metadata.test
100.100.100.200 alibaba-metadata.test
fd00:100::100:200 alibaba-metadata-v6.test
169.254.0.23 tencent-metadata.test
169.254.42.42 scaleway-metadata.test
fd00:42::42 scaleway-metadata-v6.test
fd00:a9fe:a9fe::1 akamai-metadata-v6.test
fe80::a9fe:a9fe openstack-metadata-v6.test
169.254.20.10 k8s-nodelocal-dns.test
100.100.100.100 tailscale-service.test
100.64.0.2 cgnat.test
2001:2::1 benchmarking-v6.test
2001:20::1 orchid2.test
3fff::1 documentation-3fff.test
2001:1::1 pcp-anycast-v6.test
2001:3::1 amt-v6.test
2001:4:112::1 as112-v6.test
2001:10::1 orchid.test
2001:30::1 drone-det.test
2620:4f:8000::1 as112-direct-v6.test
192.31.196.1 as112-v4.test
192.52.193.1 amt-v4.test
192.175.48.1 as112-direct-v4.test
EOF
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$tmp/resolv.conf"

ip netns exec "$up" python3 egress/cases_upstream.py "$tmp/up" \
	"$(echo 10.233.0.2 fd00:233::2 $traps4 $traps6 | tr ' ' ,)" 80,443,8080,8443 &
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
