#!/usr/bin/env bash
# Remove everything up.sh DIR made, in reverse: the daemons (by their pids,
# each waited for), the registry and httpd, the namespaces, then DIR.
set -u
dir=${1:?usage: down.sh DIR}
[ -f "$dir/made" ] || { rm -rf "$dir"; exit 0; }
stop() {
	kill "$1" 2>/dev/null || return 0
	for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	kill -9 "$1" 2>/dev/null
}
# leave the swarm first so that the daemons end promptly
while read -r kind a b; do
	[ "$kind" = dockerd ] && docker -H "unix://$dir/$a/sock" swarm leave --force >/dev/null 2>&1
done <"$dir/made"
tac "$dir/made" | while read -r kind a b; do
	case $kind in
	dockerd) stop "$b" ;;
	pid) stop "$a" ;;
	esac
done
# what dockerd's containerd and shims left mounted beneath DIR
grep -o " $dir/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
# the cgroup parents the daemons made (empty once their containers are gone)
pfx=$(sed -n 's/^pfx=//p' "$dir/made")
[ -n "$pfx" ] && for c in /sys/fs/cgroup/*/"$pfx"-* /sys/fs/cgroup/*/*/"$pfx"-*; do
	[ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
done
tac "$dir/made" | while read -r kind a b; do
	[ "$kind" = netns ] && ip netns del "$a" 2>/dev/null
done
rm -rf "$dir"
