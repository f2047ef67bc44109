#!/usr/bin/env bash
# Bring up a real Docker swarm on this machine for mcpgate's swarm test:
# a manager and two workers, each a dockerd of its own (data-root, exec-root,
# pidfile, socket, cgroup parent) in a network namespace of its own, joined
# over a bridge in a fourth namespace (the "hub", which also plays the
# outside host: busybox httpd on HUB:8080). The manager runs a registry on
# MANAGER:5000 that every node trusts, and one on its own 127.0.0.1:5001
# that only the manager reaches. Nothing on the host changes: the host's
# dockerd, iptables and /etc/docker are left alone (docs/2026-12-02-swarm.md).
#
#   up.sh DIR SECCOMP_PROFILE   -> writes DIR/env (sourceable) or exits 77
#   down.sh DIR                 -> removes everything up.sh made
#
# The workers are labelled mcpgate=true and enforce SECCOMP_PROFILE and
# no-new-privileges node-wide, with no default bridge; the manager does not
# (the test uses it as the node that must be refused).
set -u
dir=${1:?usage: up.sh DIR SECCOMP_PROFILE}
profile=${2:?usage: up.sh DIR SECCOMP_PROFILE}
skip() { echo "# SKIP swarm: $*"; exit 77; }
fail() { echo "# swarm bring-up failed: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, dockerd)"
for c in ip nsenter unshare dockerd docker docker-registry busybox; do
	command -v "$c" >/dev/null || skip "$c is not installed"
done
[ -r "$profile" ] || fail "no seccomp profile at $profile"

mkdir -p "$dir" || fail "cannot make $dir"
id=$(basename "$dir" | tr -dc "a-z0-9" | tail -c 4)
[ -n "$id" ] || id=$$
pfx=mgsw$id
net=10.231.$((RANDOM % 200 + 20))
echo "id=$id" >"$dir/made"
echo "pfx=$pfx" >>"$dir/made"

hub=$pfx-hub
ip netns add "$hub" || skip "cannot make a network namespace"
echo "netns $hub" >>"$dir/made"
ip -n "$hub" link add br0 type bridge && ip -n "$hub" link set br0 up &&
	ip -n "$hub" addr add "$net.254/24" dev br0 && ip -n "$hub" link set lo up ||
	fail "hub bridge"

nodes="m w1 w2"
n=0
for node in $nodes; do
	n=$((n + 1))
	ns=$pfx-$node
	ip netns add "$ns" || fail "netns $ns"
	echo "netns $ns" >>"$dir/made"
	ip link add "${pfx}$node" type veth peer name "${pfx}${node}h" || fail "veth for $node"
	ip link set "${pfx}$node" netns "$ns" && ip link set "${pfx}${node}h" netns "$hub" &&
		ip -n "$hub" link set "${pfx}${node}h" master br0 && ip -n "$hub" link set "${pfx}${node}h" up &&
		ip -n "$ns" link set "${pfx}$node" name eth0 && ip -n "$ns" link set eth0 up &&
		ip -n "$ns" link set lo up && ip -n "$ns" addr add "$net.$n/24" dev eth0 &&
		ip -n "$ns" route add default via "$net.254" || fail "addresses of $node"
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
done
manager=$net.1

# the outside host: a page on the hub, reachable only through a node's NAT
mkdir -p "$dir/www" && echo "outside-ok" >"$dir/www/index.html"
nsenter --net="/run/netns/$hub" busybox httpd -f -p "$net.254:8080" -h "$dir/www" </dev/null >/dev/null 2>&1 &
echo "pid $!" >>"$dir/made"

# the registry, in the manager's namespace
cat >"$dir/registry.yml" <<YML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $dir/registry
http:
  addr: $manager:5000
YML
nsenter --net="/run/netns/$pfx-m" docker-registry serve "$dir/registry.yml" </dev/null >"$dir/registry.log" 2>&1 &
echo "pid $!" >>"$dir/made"
# a registry only the manager reaches (its own loopback): where a server's
# image may come from, not where the nodes pull
sed -e "s|$dir/registry\$|$dir/elsewhere|" -e "s|addr: .*|addr: 127.0.0.1:5001|" \
	"$dir/registry.yml" >"$dir/elsewhere.yml"
nsenter --net="/run/netns/$pfx-m" docker-registry serve "$dir/elsewhere.yml" </dev/null >"$dir/elsewhere.log" 2>&1 &
echo "pid $!" >>"$dir/made"

start_node() { # node enforced
	local node=$1 enforced=$2 d=$dir/$1
	mkdir -p "$d/data" "$d/x"
	if [ "$enforced" = 1 ]; then
		cat >"$d/daemon.json" <<JSON
{"seccomp-profile": "$profile", "no-new-privileges": true, "bridge": "none",
 "insecure-registries": ["$manager:5000"], "deprecated-key-path": "$d/key.json",
 "log-driver": "none", "userland-proxy": false}
JSON
	else
		cat >"$d/daemon.json" <<JSON
{"insecure-registries": ["$manager:5000"], "deprecated-key-path": "$d/key.json",
 "log-driver": "none", "userland-proxy": false}
JSON
	fi
	nsenter --net="/run/netns/$pfx-$node" unshare --uts sh -c "hostname $pfx-$node; exec dockerd \
		--config-file '$d/daemon.json' --data-root '$d/data' --exec-root '$d/x' \
		--pidfile '$d/dockerd.pid' -H 'unix://$d/sock' --cgroup-parent '/$pfx-$node'" \
		</dev/null >"$d/dockerd.log" 2>&1 &
	echo "dockerd $node $!" >>"$dir/made"
}
start_node m 0
start_node w1 1
start_node w2 1
for node in $nodes; do
	ok=0
	for _ in $(seq 1 150); do
		docker -H "unix://$dir/$node/sock" version >/dev/null 2>&1 && { ok=1; break; }
		sleep 0.2
	done
	[ $ok = 1 ] || { sed 's/^/# /' "$dir/$node/dockerd.log" | tail -8; fail "dockerd of $node did not answer"; }
done

dm() { docker -H "unix://$dir/m/sock" "$@"; }
dm swarm init --advertise-addr "$manager" --default-addr-pool 10.232.0.0/16 >/dev/null ||
	fail "swarm init"
token=$(dm swarm join-token -q worker) || fail "join token"
for node in w1 w2; do
	docker -H "unix://$dir/$node/sock" swarm join --token "$token" "$manager:2377" >/dev/null ||
		fail "$node did not join"
	dm node update --label-add mcpgate=true "$pfx-$node" >/dev/null || fail "label $node"
done
for _ in $(seq 1 50); do
	curl -sf -o /dev/null --max-time 1 "http://$manager:5000/v2/" 2>/dev/null && break
	nsenter --net="/run/netns/$pfx-m" busybox wget -q -O /dev/null "http://$manager:5000/v2/" 2>/dev/null && break
	sleep 0.2
done

cat >"$dir/env" <<ENV
SWARM_DIR=$dir
SWARM_PREFIX=$pfx
SWARM_NET=$net
SWARM_MANAGER=unix://$dir/m/sock
SWARM_W1=unix://$dir/w1/sock
SWARM_W2=unix://$dir/w2/sock
SWARM_REGISTRY=$manager:5000
SWARM_ELSEWHERE=127.0.0.1:5001
SWARM_OUTSIDE=$net.254:8080
SWARM_NS_MANAGER=$pfx-m
ENV
echo "# swarm $pfx up: manager $manager, workers $pfx-w1 $pfx-w2"
