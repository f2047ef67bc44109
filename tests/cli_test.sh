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
has "$errout" 'unknown argument "--bogus"'; ok $? "and names the argument"
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
run env -u XDG_CONFIG_HOME HOME="$tmp/home" "$mcpgate" check
has "$errout" "$tmp/home/.config/mcpgate/mcp.toml"; ok $? "the default place is ~/.config/mcpgate"
run env MCPGATE_LOG=loud "$mcpgate" check
ok $(( rc != 2 )) "a bad MCPGATE_LOG is refused"

tap_done
