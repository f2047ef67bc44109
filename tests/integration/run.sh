#!/usr/bin/env bash
# The runtime integration tests: opt-in for a person (MCPGATE_CONTAINER_TESTS=1),
# always on in CI. Runs every test here once per runtime in
# MCPGATE_CONTAINER_TEST_RUNTIME (default: "podman docker"), starting what is
# not running yet (a local registry on 127.0.0.1:5000, dockerd) and stopping
# what it started. Needs root for dockerd and the podman settings that
# scripts/setup writes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ "${MCPGATE_CONTAINER_TESTS:-0}" != 1 ]; then
	echo "ok 1 # SKIP runtime integration tests: set MCPGATE_CONTAINER_TESTS=1 to run them"
	echo "0 passed, 0 failed"
	exit 77
fi

work=$(mktemp -d /tmp/mcpgate-services-XXXXXX)
started=()
stop_all() {
	[ "${added_rule:-0}" = 1 ] && iptables -D "${rule[@]}" 2>/dev/null
	for pid in "${started[@]}"; do
		kill "$pid" 2>/dev/null
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	done
	rm -rf "$work"
}
trap stop_all EXIT

# the local registry (Debian's docker-registry), without auth, storage in $work.
# The package may have started its own with htpasswd auth (401): stop that one.
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 http://127.0.0.1:5000/v2/)
if [ "$code" = 401 ]; then
	pkill -f 'docker-registry serve /etc/docker/registry/config.yml' && sleep 0.5
	echo "# stopped the packaged registry that asks for a password"
fi
if [ "$code" != 200 ]; then
	cat >"$work/registry.yml" <<YML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: 127.0.0.1:5000
YML
	docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
	started+=($!)
	for _ in $(seq 1 100); do
		curl -sf -o /dev/null --max-time 1 http://127.0.0.1:5000/v2/ && break
		sleep 0.1
	done
	curl -sf -o /dev/null --max-time 2 http://127.0.0.1:5000/v2/ ||
		{ echo "not ok - the local registry did not start:"; sed 's/^/# /' "$work/registry.log"; exit 1; }
	echo "# started a registry on 127.0.0.1:5000"
fi

# docker sets the FORWARD policy to DROP and loads br_netfilter, after which
# traffic between two containers on one podman --internal bridge is dropped
# too (netavark adds no accept rule for internal networks): let what stays on
# a podman bridge through, as it would be without docker (docs/operations.md)
rule=(FORWARD -i podman+ -o podman+ -j ACCEPT)
added_rule=0
if command -v iptables >/dev/null && iptables -S FORWARD 2>/dev/null | grep -q '^-P FORWARD DROP' &&
	! iptables -C "${rule[@]}" 2>/dev/null; then
	iptables -I "${rule[@]}" && added_rule=1 && echo "# allowed traffic within podman bridges (FORWARD is DROP)"
fi

status=0
for runtime in ${MCPGATE_CONTAINER_TEST_RUNTIME:-podman docker}; do
	if ! command -v "$runtime" >/dev/null; then
		echo "ok - $runtime # SKIP $runtime is not installed"
		continue
	fi
	if [ "$runtime" = docker ] && ! docker version >/dev/null 2>&1; then
		if ! command -v dockerd >/dev/null; then
			echo "ok - docker # SKIP no docker daemon and no dockerd to start"
			continue
		fi
		dockerd >"$work/dockerd.log" 2>&1 &
		started+=($!)
		for _ in $(seq 1 300); do docker version >/dev/null 2>&1 && break; sleep 0.2; done
		docker version >/dev/null 2>&1 ||
			{ echo "not ok - dockerd did not start:"; tail -5 "$work/dockerd.log" | sed 's/^/# /'; status=1; continue; }
		echo "# started dockerd"
	fi
	for t in "$here"/*_test.py; do
		began=$SECONDS
		MCPGATE_CONTAINER_TEST_RUNTIME=$runtime python3 "$t"
		rc=$?
		echo "# $runtime: $(basename "$t") took $((SECONDS - began)) s"
		# 77: the test skipped itself, with its reason on an ok line
		[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || status=1
	done
done

# The swarm driver on a real swarm of three dockerd in network namespaces of
# their own (tests/integration/swarm/): once, not per runtime; it skips (77)
# where the swarm cannot come up
began=$SECONDS
python3 "$here/swarm/swarm_test.py"
rc=$?
echo "# swarm_test.py took $((SECONDS - began)) s"
[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || status=1

# Rootless podman, as a person runs it: the podman tests again as the
# unprivileged user MCPGATE_TEST_ROOTLESS_USER names (CI makes one), from a
# copy of the tree that user owns, first without XDG_RUNTIME_DIR (a login by
# su, a cron job), then with one of its own.
ruser=${MCPGATE_TEST_ROOTLESS_USER:-}
case " ${MCPGATE_CONTAINER_TEST_RUNTIME:-podman docker} " in *" podman "*) ;; *) ruser= ;; esac
if [ -n "$ruser" ] && [ "$(id -u)" -eq 0 ] && command -v podman >/dev/null; then
	set -o pipefail # a test's status passes through the sed that labels its lines
	if ! id "$ruser" >/dev/null 2>&1; then
		echo "not ok - rootless: no user $ruser"
		exit 1
	fi
	top=$(cd "$here/../.." && pwd)
	tree=$work/rootless
	mkdir -p "$tree"
	cp -a "$top/." "$tree/"
	chown -R "$ruser" "$tree"
	chmod 755 "$work"
	rdir=$work/rootless-xdg
	mkdir -m 700 "$rdir" && chown "$ruser" "$rdir"
	mcpgate=${MCPGATE:-./mcpgate} probe=${PROBE:-build/fakes/mcpgate-probe}
	case "$mcpgate" in /*) mcpgate=${mcpgate#"$top"/} ;; esac
	case "$probe" in /*) probe=${probe#"$top"/} ;; esac
	echo "# rootless podman as $ruser ($(su "$ruser" -c 'podman info --format "cgroup {{.Host.CgroupsVersion}}, {{.Host.NetworkBackend}}"' 2>/dev/null))"
	for t in containers egress mounts everything add sdk2 packages pypi connect; do
		began=$SECONDS
		su "$ruser" -s /bin/sh -c "cd '$tree' && exec env -u XDG_RUNTIME_DIR \
			MCPGATE_CONTAINER_TEST_RUNTIME=podman MCPGATE='$mcpgate' PROBE='$probe' \
			python3 tests/integration/${t}_test.py" | sed "s/^\(not \)\{0,1\}ok [0-9]* -/& rootless:/" || status=1
		echo "# rootless: ${t}_test.py took $((SECONDS - began)) s"
	done
	echo "# rootless podman with XDG_RUNTIME_DIR=$rdir"
	su "$ruser" -s /bin/sh -c "cd '$tree' && exec env XDG_RUNTIME_DIR='$rdir' \
		MCPGATE_CONTAINER_TEST_RUNTIME=podman MCPGATE='$mcpgate' PROBE='$probe' \
		python3 tests/integration/containers_test.py" | sed "s/^\(not \)\{0,1\}ok [0-9]* -/& rootless, XDG_RUNTIME_DIR set:/" || status=1
fi
exit $status
