# TAP for the shell tests: source it after setting $tmp (a scratch folder).
# ok STATUS NAME: a check that passed when STATUS is 0; run CMD...: sets
# $out, $errout, $rc; has TEXT PART: PART is in TEXT; tap_done: the closing
# "N passed, N failed" and the exit status.
n=0 pass=0 fail=0

ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		pass=$((pass + 1)); echo "ok $n - $2"
	else
		fail=$((fail + 1)); echo "not ok $n - $2"
	fi
}

run() {
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	out=$(cat "$tmp/out")
	errout=$(cat "$tmp/err")
}

has() { printf '%s' "$1" | grep -qF -- "$2"; }

tap_done() {
	echo "1..$n"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
