#!/usr/bin/env bash
# The session fuzzer (fuzz/session_fuzz.c) for a bounded time, from the seed
# corpus and reproducers in testdata/fuzz/session_fuzz: a whole session on
# stdio and through the listener's request path, its client and servers played
# by the fuzzer. One TAP line with the executions, the coverage (libFuzzer's
# cov and ft) and exec/s; any finding (a sanitizer's report, one of the
# fuzzer's own checks, a hang, a leak) fails it, naming the input kept under
# build/fuzz/findings/ to add to testdata/fuzz/session_fuzz/.
#
#   SESSION_FUZZ=build/fuzz/session_fuzz SESSION_FUZZ_SECONDS=120 tests/session_fuzz_test.sh
set -u
bin=${SESSION_FUZZ:-build/fuzz/session_fuzz}
seconds=${SESSION_FUZZ_SECONDS:-120}
seeds=testdata/fuzz/session_fuzz
findings=build/fuzz/findings
if [ ! -x "$bin" ]; then
	echo "ok 1 # SKIP $bin is not built (make build/fuzz/session_fuzz, with clang)"
	echo "0 passed, 0 failed"
	exit 77
fi
work=$(mktemp -d /dev/shm/session-fuzz-test.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/tmp" "$findings"
# the target's folders go here, also those of an input that crashed
export TMPDIR=$work/tmp
# -close_fd_mask=2: the sessions' own logging is not wanted here; libFuzzer's
# lines and the sanitizers' reports still come
nice -n 10 "$bin" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 \
	-close_fd_mask=2 -print_final_stats=1 -artifact_prefix="$findings/" \
	"$work/corpus" "$seeds" >"$work/log" 2>&1
rc=$?
stat() { sed -n "s/^stat::$1: *//p" "$work/log" | tail -1; }
execs=$(stat number_of_executed_units)
rate=$(stat average_exec_per_sec)
last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$work/log" | tail -1)
cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
summary="${execs:-?} executions in ${seconds} s (${rate:-?}/s), cov ${cov:-?} ft ${ft:-?}, corpus ${corp:-?}"
artifact=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$work/log" | tail -1)
if [ "$rc" -eq 0 ] && [ -z "$artifact" ]; then
	echo "ok 1 - the session fuzzer: $summary, no finding"
	echo "1 passed, 0 failed"
	exit 0
fi
echo "not ok 1 - the session fuzzer found something (exit $rc): $summary"
# the report, its first frames, and the input
grep -E 'FINDING|ERROR:|SUMMARY:|^ +#([0-9]|1[0-9]) 0x|runtime error|Test unit written|Base64:' \
	"$work/log" | grep -v 'fuzzer::\|libc\.so\|__sanitizer' | head -40 | sed 's/^/# /'
[ -n "$artifact" ] && echo "# reproduce: $bin $artifact (SESSION_FUZZ_TRACE=1 shows each op and line)"
echo "0 passed, 1 failed"
exit 1
