#!/usr/bin/env bash
# The public suffix list `mcpgate check` judges wildcard "network" entries by:
# mcpgate's own copy (third_party/publicsuffix/), installed beside the binary
# by `make install`, never the system's. Wildcards on the suffixes under which
# anyone gets a name are refused, one under a domain with one owner is not,
# and without a readable list every wildcard is refused.
# Run from the repository top; $MCPGATE names the binary (default ./mcpgate).
set -u
mcpgate=${MCPGATE:-./mcpgate}
tmp=$(mktemp -d)
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib/tap.sh"
unset MCPGATE_PUBLIC_SUFFIX_LIST

# one server whose network lists $1 (a TOML array's inside)
conf() {
	mkdir -p "$tmp/conf"
	cat >"$tmp/conf/mcp.toml" <<TOML
[[server]]
name = "wild"
transport = "container"
image = "example.org/probe@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
network = [$1]
TOML
}

# the named ones, and a handful more from the list's private section
shared="*.s3.us-east-1.amazonaws.com *.blob.core.windows.net *.storage.googleapis.com
*.ngrok-free.app *.execute-api.us-east-1.amazonaws.com *.lambda-url.us-east-1.on.aws *.r2.dev
*.trycloudflare.com *.ngrok-free.dev *.supabase.co *.mybucket.s3.amazonaws.com"

# refused WHAT WHO ENTRY...: each entry alone fails check, named in the report
refused() {
	local what=$1 who=$2 e
	shift 2
	for e in "$@"; do
		conf "\"$e\""
		run "$who" check --config "$tmp/conf"
		[ "$rc" -eq 1 ] && has "$errout" "\"network\" entry \"$e\" is a wildcard"
		ok $? "$what: $e is refused"
	done
}

# shellcheck disable=SC2086 # the list is words
refused "built in the tree" "$mcpgate" $shared
conf '"*.example.com", "*.api.example.co.uk"'
run "$mcpgate" check --config "$tmp/conf"
[ "$rc" -eq 0 ] && [ "$out" = "configuration OK" ]
ok $? "a wildcard under a domain with one owner passes ($errout)"
conf '"*.s3.us-east-1.amazonaws.com"'
run "$mcpgate" check --config "$tmp/conf"
has "$errout" "public suffix list ($(pwd -P)/third_party/publicsuffix/public_suffix_list.dat)"
ok $? "the list a mcpgate built in the tree reads is the tree's copy"

# installed: make install puts the list beside mcpgate, and that mcpgate reads it
stage_install "$mcpgate"
line=$(install_line 'public_suffix_list.dat')
[ "$line" = "install -m 0644 third_party/publicsuffix/public_suffix_list.dat $inst/usr/share/mcpgate/public_suffix_list.dat" ]
ok $? "make install copies the list to PREFIX/share/mcpgate"
eval "$line"
cmp -s third_party/publicsuffix/public_suffix_list.dat "$inst/usr/share/mcpgate/public_suffix_list.dat"
ok $? "the installed list is the vendored one"
installed=$inst/usr/bin/mcpgate
list=$inst/usr/share/mcpgate/public_suffix_list.dat
# shellcheck disable=SC2086
refused installed "$installed" $shared
conf '"*.blob.core.windows.net"'
run "$installed" check --config "$tmp/conf"
has "$errout" "public suffix list ($list)"; ok $? "an installed mcpgate names the installed list"
conf '"*.example.com"'
run "$installed" check --config "$tmp/conf"
[ "$rc" -eq 0 ]; ok $? "an installed mcpgate passes *.example.com"

# without a readable list, every wildcard is refused, naming the list; a
# configuration without one does not need it
mv "$list" "$list.away"
conf '"*.example.com"'
run "$installed" check --config "$tmp/conf"
[ "$rc" -eq 1 ] && has "$errout" "\"*.example.com\" cannot be checked against the public suffix list, so it is refused: the public suffix list $inst/usr/bin/../share/mcpgate/public_suffix_list.dat cannot be read: No such file or directory"
ok $? "the list missing: *.example.com is refused, naming where the list should be ($errout)"
conf '"api.example.com"'
run "$installed" check --config "$tmp/conf"
[ "$rc" -eq 0 ]; ok $? "the list missing: a configuration without a wildcard passes"
mkdir "$list"
conf '"*.example.com"'
run "$installed" check --config "$tmp/conf"
[ "$rc" -eq 1 ] && has "$errout" "cannot be checked against the public suffix list"
ok $? "a folder where the list should be: *.example.com is refused"
rmdir "$list"
head -c 4000 "$list.away" >"$list"
run "$installed" check --config "$tmp/conf"
[ "$rc" -eq 1 ] && has "$errout" "is not a whole public suffix list"
ok $? "a list cut short: *.example.com is refused"
if [ "$(id -u)" -ne 0 ]; then
	cp "$list.away" "$list" && chmod 000 "$list"
	run "$installed" check --config "$tmp/conf"
	[ "$rc" -eq 1 ] && has "$errout" "Permission denied"
	ok $? "an unreadable list: *.example.com is refused"
else
	# root reads a mode-000 file: a user namespace without root in it does not
	if unshare -U true 2>/dev/null; then
		cp "$list.away" "$list" && chmod 000 "$list"
		run unshare -U "$installed" check --config "$tmp/conf"
		[ "$rc" -eq 1 ] && has "$errout" "Permission denied"
		ok $? "an unreadable list: *.example.com is refused ($errout)"
	else
		echo "ok $((n + 1)) - an unreadable list # SKIP no user namespace to drop root in"
		n=$((n + 1))
	fi
fi

tap_done
