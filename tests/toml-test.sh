#!/usr/bin/env bash
# The toml-test corpus (valid and invalid TOML 1.0.0 documents) through
# toml-decode, reported as one TAP test for tests/run-unit.
#
#   TOML_DECODE    the decoder to run (default ./toml-decode)
#   TOML_TEST_DIR  the corpus (default: ../shared/toml-test beside the repository top)
#
# Exits 0 when every case passes, 1 when one fails, 77 when there is no corpus.
set -eu

script_dir=$(cd "$(dirname "$0")" && pwd)
decoder=${TOML_DECODE:-./toml-decode}

if [ -n "${TOML_TEST_DIR:-}" ]; then
	corpus=$TOML_TEST_DIR
else
	top=$(git -C "$script_dir" rev-parse --show-toplevel 2>/dev/null || true)
	if [ -z "$top" ]; then
		top=$(cd "$script_dir/.." && pwd)
	fi
	corpus=$top/../shared/toml-test
fi

if [ ! -f "$corpus/run" ]; then
	echo "ok 1 # SKIP toml-test corpus not found"
	echo "0 passed, 0 failed"
	exit 77
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
python3 "$corpus/run" "$decoder" "$corpus" >"$out" 2>&1 || status=$?

summary=$(grep '^toml-test: ' "$out" | tail -n 1 || true)
if [ "$status" -eq 0 ] && [ -n "$summary" ]; then
	echo "ok 1 - toml-test corpus: $summary"
	echo "1 passed, 0 failed"
	exit 0
fi
echo "not ok 1 - toml-test corpus: ${summary:-the run did not finish (status $status)}"
grep -v '^toml-test: ' "$out" | sed 's/^/# /' || true
echo "0 passed, 1 failed"
exit 1
