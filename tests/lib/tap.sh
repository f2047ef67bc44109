# TAP for the shell tests: source it after setting $tmp (a scratch folder).
# ok STATUS NAME: a check that passed when STATUS is 0; run CMD...: sets
# $out, $errout, $rc; has TEXT PART: PART is in TEXT; tap_done: the closing
# "N passed, N failed" and the exit status; stage_install BIN and
# install_line TEXT: a staged `make install` to try an installed mcpgate.
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

# A staged install under $tmp/inst (set as $inst), PREFIX=/usr: BIN copied
# to $inst/usr/bin/mcpgate, the share folder made; files go there by
# eval "$(install_line NAME)".
stage_install() {
	inst=$(cd "$tmp" && pwd -P)/inst
	mkdir -p "$inst/usr/bin" "$inst/usr/share/mcpgate"
	cp "$1" "$inst/usr/bin/mcpgate"
}

# The line of `make install` (into $inst, PREFIX=/usr) that names TEXT
install_line() {
	make -s -n install DESTDIR="$inst" PREFIX=/usr 2>/dev/null | grep -F -- "$1"
}

tap_done() {
	echo "1..$n"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
