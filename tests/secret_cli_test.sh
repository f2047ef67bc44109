#!/usr/bin/env bash
# `mcpgate secret`: values only from standard input and never shown, bindings,
# usage errors, passphrase mode, a damaged keychain left as it is.
# Run from the repository top; $MCPGATE names the binary (default ./mcpgate).
set -u
mcpgate=${MCPGATE:-./mcpgate}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib/tap.sh"
unset MCPGATE_PASSPHRASE_FD
data="$tmp/data"
value='tok-3f9a1c-never-shown'

secret() { run "$mcpgate" secret --data "$data" "$@"; }
leaks() { ! has "$out$errout" "$value"; }

run "$mcpgate" help secret
ok $(( rc != 0 )) "help secret exits 0"
has "$out" "--position env:VAR|header:NAME"; ok $? "and shows bind's options"
run "$mcpgate" --help
has "$out" "secret"; ok $? "--help lists secret"
run "$mcpgate" secret
ok $(( rc != 2 )) "secret without an action is a usage error"
secret frob x </dev/null
ok $(( rc != 2 )) "an unknown action is a usage error"
has "$errout" 'unknown action "frob"'; ok $? "and names it"
secret set gh.token "$value" </dev/null
ok $(( rc != 2 )) "a value as an argument is refused"
has "$errout" "never from an argument"; ok $? "and says where values come from"
leaks; ok $? "without repeating it"
secret set </dev/null
ok $(( rc != 2 )) "set without a name is a usage error"
secret set 'bad/name' </dev/null
ok $(( rc != 2 )) "a bad name is a usage error"
has "$errout" '"bad/name"'; ok $? "and names it"
secret set gh.token --bogus </dev/null
ok $(( rc != 2 )) "an unknown option is a usage error"

secret list
ok $(( rc != 0 )) "list of no keychain exits 0"
has "$errout" "no secrets in $data/keychain"; ok $? "and says it is empty"
[ ! -e "$data" ]; ok $? "list creates nothing"

# input FILE...: standard input for the next command, from printf's arguments
input() { printf "$@" >"$tmp/in"; }
input '%s\n' "$value"
secret set gh.token <"$tmp/in"
ok $(( rc != 0 )) "set reads the value from standard input"
has "$out" "stored gh.token in $data/keychain"; ok $? "and says where"
has "$out" "bound nowhere"; ok $? "and that it reaches no server yet"
leaks; ok $? "the value is not shown"
! grep -qF -- "$value" "$data/keychain"; ok $? "the value is not in the file in clear"
[ "$(stat -c %a "$data")" = 700 ]; ok $? "the folder is 0700"
[ "$(stat -c %a "$data/keychain")" = 600 ]; ok $? "the keychain is 0600"
[ "$(stat -c %a "$data/keychain.key")" = 600 ]; ok $? "the key file is 0600"
[ "$(stat -c %s "$data/keychain.key")" = 32 ]; ok $? "the key file is 32 bytes"

input 'second-value'
secret set gh.token <"$tmp/in"
ok $(( rc != 0 )) "set again (no newline) replaces"
has "$out" "replaced gh.token"; ok $? "and says so"
input '%s' "$value"
secret set other.key <"$tmp/in"
input ''
secret set empty <"$tmp/in"
ok $(( rc != 1 )) "an empty value is refused"
has "$errout" "no value on standard input"; ok $? "and says so"
input '\n'
secret set empty <"$tmp/in"
ok $(( rc != 1 )) "a lone newline is an empty value"
head -c 65537 /dev/zero | tr '\0' a >"$tmp/in"
secret set big <"$tmp/in"
ok $(( rc != 1 )) "a value over 64 KiB is refused"
has "$errout" "longer than 65536 bytes"; ok $? "and says the limit"
{ head -c 65536 /dev/zero | tr '\0' a; echo; } >"$tmp/in"
secret set big <"$tmp/in"
ok $(( rc != 0 )) "a value of 64 KiB and a newline is kept"
input 'a\0b'
secret set nul <"$tmp/in"
ok $(( rc != 1 )) "a value with a NUL byte is refused"

secret bind gh.token --host api.github.com --host GitHub.com:8443 --position env:GH_TOKEN
ok $(( rc != 0 )) "bind to two hosts"
has "$out" "gh.token may go to api.github.com, github.com:8443 in env:GH_TOKEN (2 new bindings)"
ok $? "and says where it may go"
secret bind gh.token --host '[2001:DB8::1]' --position header:Authorization
ok $(( rc != 0 )) "bind to an IPv6 host in a header"
secret bind gh.token --host api.github.com --position env:PATH
ok $(( rc != 2 )) "a reserved variable is a usage error"
has "$errout" 'env:PATH'; ok $? "and names the position"
secret bind gh.token --host 'https://api.github.com' --position env:GH_TOKEN
ok $(( rc != 2 )) "a URL as a host is a usage error"
has "$errout" 'has a scheme'; ok $? "and says why"
secret bind gh.token --host '*.co.uk' --position env:GH_TOKEN
ok $(( rc != 2 )) "a wildcard on a public suffix is a usage error, as in network"
has "$errout" 'is a wildcard on a public suffix'; ok $? "and says why"
secret bind gh.token --host '*.github.io' --position env:GH_TOKEN
ok $(( rc != 2 )) "the list's private section counts too"
secret bind gh.token --host '*.example.com' --position env:GH_TOKEN
ok $(( rc != 0 )) "a wildcard under a domain with one owner binds"
secret unbind gh.token --host '*.example.com'
ok $(( rc != 0 )) "and unbinds"
secret bind gh.token --host api.github.com
ok $(( rc != 2 )) "bind without --position is a usage error"
secret bind gh.token --position env:X
ok $(( rc != 2 )) "bind without --host is a usage error"
secret bind nope --host api.github.com --position env:X
ok $(( rc != 1 )) "binding a secret not stored fails"
has "$errout" "there is no secret nope"; ok $? "and says so"
secret set gh.token --host x.example </dev/null
ok $(( rc != 2 )) "--host belongs to bind and unbind"

secret list
ok $(( rc != 0 )) "list exits 0"
expect="big        (bound nowhere)
gh.token   env:GH_TOKEN -> api.github.com, github.com:8443
           header:Authorization -> [2001:db8::1]
other.key  (bound nowhere)"
[ "$out" = "$expect" ]; ok $? "list shows names and bindings"
[ "$out" = "$expect" ] || printf '%s\n' "$out" | sed 's/^/#   /'
leaks && ! has "$out" "second-value"; ok $? "list never shows a value"

secret unbind gh.token --host github.com:8443
ok $(( rc != 0 )) "unbind one host"
secret unbind gh.token --host github.com:8443
ok $(( rc != 1 )) "unbind of a host not bound fails"
has "$errout" "gh.token is not bound to github.com:8443"; ok $? "and says so"
secret list
has "$out" "env:GH_TOKEN -> api.github.com" && ! has "$out" "8443"; ok $? "the binding is gone"
secret unbind gh.token
ok $(( rc != 0 )) "unbind every binding"
has "$out" "2 bindings removed"; ok $? "and counts them"
secret rm other.key
ok $(( rc != 0 )) "rm"
secret rm other.key
ok $(( rc != 1 )) "rm of a secret not there fails"
has "$errout" "there is no secret other.key"; ok $? "and says so"
secret list
! has "$out" "other.key"; ok $? "it is gone from the list"

# a damaged keychain is refused and left as it is
cp "$data/keychain" "$tmp/good"
printf '\x00' | dd of="$data/keychain" bs=1 seek=100 conv=notrunc status=none
cp "$data/keychain" "$tmp/bad"
secret list
ok $(( rc != 1 )) "a damaged keychain is refused"
has "$errout" "$data/keychain has been altered or damaged"; ok $? "naming the file"
input 'x'
secret set new.one <"$tmp/in"
ok $(( rc != 1 )) "a change to it is refused"
cmp -s "$data/keychain" "$tmp/bad"; ok $? "and the file is untouched"
cp "$tmp/good" "$data/keychain"
cp "$data/keychain.key" "$tmp/key"
head -c 32 /dev/urandom >"$data/keychain.key"
secret list
has "$errout" "wrong key"; ok $? "another key file is a wrong key"
cp "$tmp/key" "$data/keychain.key"

# passphrase mode
pdata="$tmp/pass"
input '%s' "$value"
run "$mcpgate" secret --data "$pdata" set p.key 3<<<"my passphrase" <"$tmp/in"
[ "$rc" -eq 0 ] && [ -f "$pdata/keychain.key" ]
ok $? "without MCPGATE_PASSPHRASE_FD a key file is used"
rm -rf "$pdata"
MCPGATE_PASSPHRASE_FD=3 run "$mcpgate" secret --data "$pdata" set p.key 3<<<"my passphrase" \
	<"$tmp/in"
ok $(( rc != 0 )) "set with a passphrase from MCPGATE_PASSPHRASE_FD"
[ ! -e "$pdata/keychain.key" ]; ok $? "no key file is made"
MCPGATE_PASSPHRASE_FD=3 run "$mcpgate" secret --data "$pdata" list 3<<<"my passphrase"
has "$out" "p.key"; ok $? "list with the same passphrase"
MCPGATE_PASSPHRASE_FD=3 run "$mcpgate" secret --data "$pdata" list 3<<<"not it"
ok $(( rc != 1 )) "another passphrase fails"
has "$errout" "wrong passphrase"; ok $? "and says so"
run "$mcpgate" secret --data "$pdata" list
has "$errout" "made with a passphrase"; ok $? "no passphrase for a passphrase keychain is refused"
MCPGATE_PASSPHRASE_FD=3 run "$mcpgate" secret --data "$data" list 3<<<"my passphrase"
has "$errout" "made with the key file"; ok $? "a passphrase for a key-file keychain is refused"
input 'v'
MCPGATE_PASSPHRASE_FD=0 run "$mcpgate" secret --data "$pdata" set x <"$tmp/in"
ok $(( rc != 1 )) "the passphrase cannot share standard input with the value"

# the default place
run env -u XDG_DATA_HOME HOME="$tmp/home" "$mcpgate" secret set home.key <"$tmp/in"
[ -f "$tmp/home/.local/share/mcpgate/keychain" ]; ok $? "the default place is ~/.local/share/mcpgate"

tap_done
