#!/usr/bin/env bash
# The mcpgate command line: help, usage errors, check on good and bad files.
# Run from the repository top; $MCPGATE names the binary (default ./mcpgate).
set -u
mcpgate=${MCPGATE:-./mcpgate}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib/tap.sh"


run "$mcpgate" --help
ok $(( rc != 0 )) "--help exits 0"
has "$out" "check" ; ok $? "--help lists check"
run "$mcpgate" help check
ok $(( rc != 0 )) "help check exits 0"
has "$out" "--mcp FILE"; ok $? "help check shows its options"
run "$mcpgate" frobnicate
ok $(( rc != 2 )) "an unknown command exits 2"
has "$errout" 'unknown command "frobnicate"'; ok $? "and names the command"
run "$mcpgate"
ok $(( rc != 2 )) "no command exits 2"
run "$mcpgate" check --bogus
ok $(( rc != 2 )) "check --bogus is a usage error"
has "$errout" 'unknown option "--bogus"'; ok $? "and names the option"

# --help and -h: every command and subcommand prints what `help CMD` prints, exit 0
for cmd in serve list pull review approve sweep secret add pack check help; do
	run "$mcpgate" help "$cmd"
	want=$out
	for flag in --help -h; do
		run "$mcpgate" "$cmd" "$flag"
		[ "$rc" -eq 0 ] && [ "$out" = "$want" ] && [ -n "$want" ]
		ok $? "$cmd $flag prints its help and exits 0"
	done
done
run "$mcpgate" help secret
want=$out
run "$mcpgate" secret set --help </dev/null
[ "$rc" -eq 0 ] && [ "$out" = "$want" ]; ok $? "secret set --help is secret's help"
run "$mcpgate" secret bind NAME --host h -h </dev/null
[ "$rc" -eq 0 ] && [ "$out" = "$want" ]; ok $? "so is -h after other options"
run "$mcpgate" help review
want=$out
run "$mcpgate" mcp review --help
[ "$rc" -eq 0 ] && [ "$out" = "$want" ]; ok $? "mcp review --help is review's help"
run "$mcpgate" mcp --help
[ "$rc" -eq 0 ] && has "$out" "mcpgate mcp add|list|pull|review|approve"; ok $? "mcp --help shows its verbs"
run "$mcpgate" check --config --help
[ "$rc" -eq 1 ] && has "$errout" "--help/mcp.toml does not exist"; ok $? "an option's value is never taken for --help"
run "$mcpgate" pack --entrypoint-arg -h
[ "$rc" -eq 2 ] && has "$errout" "where to?"; ok $? "-h as a value goes to the command"
# every option a command's help shows is one the command takes
for cmd in serve list pull review approve sweep secret add pack check; do
	bad=
	for o in $("$mcpgate" help "$cmd" | grep -o -- '[ [(|,]--[a-z][a-z-]*' | cut -c2- | sort -u); do
		"$mcpgate" "$cmd" "$o=x" --help >/dev/null 2>&1 </dev/null || bad="$bad $o"
	done
	[ -z "$bad" ]; ok $? "$cmd takes every option its help shows${bad:+ (not:$bad)}"
done

# did you mean: a mistyped command, verb or option names the one meant
for pair in reveiw:review srve:serve aprove:approve chek:check rev:review; do
	run "$mcpgate" "${pair%%:*}"
	[ "$rc" -eq 2 ] && has "$errout" "unknown command \"${pair%%:*}\"; did you mean \"${pair##*:}\"?"
	ok $? "${pair%%:*}: did you mean ${pair##*:}"
done
run "$mcpgate" frobnicate
! has "$errout" "did you mean"; ok $? "nothing close: no suggestion"
run "$mcpgate" help reveiw
[ "$rc" -eq 2 ] && has "$errout" 'did you mean "review"?'; ok $? "help reveiw: did you mean review"
run "$mcpgate" mcp pul
[ "$rc" -eq 2 ] && has "$errout" 'did you mean "pull"?'; ok $? "mcp pul: did you mean pull"
run "$mcpgate" list --jsn
[ "$rc" -eq 2 ] && has "$errout" 'unknown option "--jsn"; did you mean "--json"?'
ok $? "list --jsn: did you mean --json"
run "$mcpgate" check --cnfig=x
[ "$rc" -eq 2 ] && has "$errout" 'unknown option "--cnfig"; did you mean "--config"?'
ok $? "check --cnfig=x: did you mean --config (the value is not shown)"
run "$mcpgate" secret lst
[ "$rc" -eq 2 ] && has "$errout" 'unknown action "lst"; did you mean "list"?'
ok $? "secret lst: did you mean list"
run "$mcpgate" check --mcp
ok $(( rc != 2 )) "--mcp without a value is a usage error"

run "$mcpgate" check --mcp mcp.toml.example
ok $(( rc != 0 )) "mcp.toml.example passes check"
[ "$out" = "configuration OK" ]; ok $? "check prints exactly 'configuration OK'"
[ -z "$errout" ]; ok $? "and nothing on stderr"

run "$mcpgate" check --mcp testdata/demo/bad-mcp.toml
ok $(( rc != 1 )) "a bad file exits 1"
lines=$(printf '%s\n' "$errout" | grep -c '^testdata/demo/bad-mcp.toml:[0-9]*:[0-9]*: ')
[ "$lines" -ge 4 ]; ok $? "every error is reported at once with file:line:col ($lines lines)"
has "$errout" "bad-mcp.toml:5:"; ok $? "the tag on line 5 is named"
has "$errout" 'bad-mcp.toml:6:12: server "files": "network" entry "*.github.io" is a wildcard on a public suffix'
ok $? "the wildcard on a public suffix on line 6 is named, with its server"
has "$errout" "bad-mcp.toml:11:"; ok $? "host-process on line 11 is named"
[ -z "$out" ]; ok $? "nothing on stdout for a bad file"

mkdir -p "$tmp/conf"
cp mcp.toml.example "$tmp/conf/mcp.toml"
run "$mcpgate" check --config "$tmp/conf"
ok $(( rc != 0 )) "check --config DIR reads DIR/mcp.toml"
printf '[mcp]\nruntime = "lxc"\n' >"$tmp/conf/config.toml"
run "$mcpgate" check --config "$tmp/conf"
ok $(( rc != 1 )) "a bad config.toml in DIR fails"
has "$errout" "$tmp/conf/config.toml:2:"; ok $? "its error names config.toml:2"
run "$mcpgate" check --config "$tmp/empty"
ok $(( rc != 1 )) "a missing mcp.toml fails"
has "$errout" "$tmp/empty/mcp.toml"; ok $? "and names the path"
has "$errout" "start from $(pwd -P)/mcp.toml.example)"; ok $? "and, from the source tree, the example in it"
# installed: make install puts the example where an installed mcpgate points
stage_install "$mcpgate"
line=$(install_line ' mcp.toml.example ')
[ "$line" = "install -m 0644 mcp.toml.example $inst/usr/share/mcpgate/mcp.toml.example" ]
ok $? "make install copies mcp.toml.example to PREFIX/share/mcpgate"
eval "$line"
run "$inst/usr/bin/mcpgate" check --config "$tmp/empty"
[ "$rc" -eq 1 ] && has "$errout" "start from $inst/usr/share/mcpgate/mcp.toml.example)"
ok $? "an installed mcpgate's missing mcp.toml names the installed example"
run env -u XDG_CONFIG_HOME HOME="$tmp/home" "$mcpgate" check
has "$errout" "$tmp/home/.config/mcpgate/mcp.toml"; ok $? "the default place is ~/.config/mcpgate"
run env MCPGATE_LOG=loud "$mcpgate" check
ok $(( rc != 2 )) "a bad MCPGATE_LOG is refused"

tap_done
