#!/bin/sh
# mcpgate-launch --listen/--connect (docs/2026-12-02-swarm.md) in a network
# namespace of its own (unshare -rn: only lo, nothing on the host's
# interfaces): a peer with a wrong token is closed unanswered while the
# launcher keeps listening; the peer with the token is answered, here with
# the refusal, since this process is not isolated (no no-new-privileges, no
# seccomp filter), naming the host; and the server's command never runs.
L=${LAUNCH:-./mcpgate-launch}
case $L in /*) ;; *) L=$(pwd)/$L ;; esac
if ! unshare -rn true 2>/dev/null; then
	echo "ok 1 # SKIP no user and network namespaces here (unshare -rn)"
	echo "0 passed, 0 failed"
	exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
token=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
printf %s "$token" >"$dir/token"
unshare -rn sh -c '
	L=$1 dir=$2 token=$3
	ip link set lo up 2>/dev/null || busybox ip link set lo up 2>/dev/null
	"$L" --listen 7000 "$dir/token" - /bin/sh -c "echo ran >$dir/ran" 2>"$dir/listen.err" &
	i=0
	while [ $i -lt 50 ]; do
		grep -q ":1B58 " /proc/net/tcp 2>/dev/null && break
		sleep 0.1
		i=$((i + 1))
	done
	printf "%s\nx\n" fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210 |
		"$L" --connect 127.0.0.1 7000 >"$dir/wrong.out" 2>"$dir/wrong.err"
	echo $? >"$dir/wrong.rc"
	printf "%s\nx\n" "$token" | "$L" --connect 127.0.0.1 7000 >"$dir/right.out" 2>"$dir/right.err"
	echo $? >"$dir/right.rc"
	wait $!
	echo $? >"$dir/listen.rc"
' sh "$L" "$dir" "$token"
n=0 failed=0
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else
		echo "not ok $n - $2"
		failed=$((failed + 1))
		shift 2
		for f in "$@"; do sed 's/^/#   /' "$f"; done
	fi
}
[ "$(cat "$dir/wrong.rc")" != 0 ] && [ ! -s "$dir/wrong.out" ] &&
	grep -q "closed without an answer" "$dir/wrong.err"
ok $? "a peer with a wrong token is closed unanswered" "$dir/wrong.err"
[ "$(cat "$dir/right.rc")" != 0 ] && [ ! -s "$dir/right.out" ] &&
	grep -q "refused .*: no-new-privileges is not set" "$dir/right.err"
ok $? "the launcher kept listening, and tells the peer with the token why it refuses, naming the host" \
	"$dir/right.err"
[ "$(cat "$dir/listen.rc")" = 126 ] && [ ! -e "$dir/ran" ]
ok $? "the server's command never ran where the isolation does not hold (exit 126)" "$dir/listen.err"
echo "1..$n"
echo "$((n - failed)) passed, $failed failed"
[ $failed = 0 ]
