#!/usr/bin/env bash
# The test fakes: mcpgate-probe driven over stdio with canned JSON-RPC lines,
# and fake-runtime driven from a temporary state DIR as podman and docker.
# Run from the repository top after `make fakes`. $PROBE and $FAKE_RUNTIME
# name other builds (a sanitizer build, say). Prints TAP lines and ends with
# "N passed, N failed"; exits 0 only when nothing failed.
set -u
shopt -s lastpipe # P at the end of a pipeline sets $rc in this shell
probe=${PROBE:-build/fakes/mcpgate-probe}
runtime=${FAKE_RUNTIME:-build/fakes/fake-runtime}
for f in "$probe" "$runtime"; do
	if [ ! -x "$f" ]; then
		echo "not ok 1 - $f is missing (run make fakes)"
		echo "0 passed, 1 failed"
		exit 1
	fi
done
n=0 pass=0 fail=0
tmp=$(mktemp -d)
bg_pids=()
cleanup() {
	local p
	for p in "${bg_pids[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

ok() { # ok STATUS NAME
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		pass=$((pass + 1))
		echo "ok $n - $2"
	else
		fail=$((fail + 1))
		echo "not ok $n - $2"
	fi
}
has() { grep -qF -- "$2" "$1"; }

# jcheck NAME FILE EXPR: EXPR (Python) over the lines of FILE: msgs (the JSON
# lines), raw (the lines that are not JSON), r(id) (the answer to id),
# text(id) (its first content text), err(id) (its error code).
jcheck() {
	python3 - "$2" "$3" <<'EOF'
import json, sys
lines = [l for l in open(sys.argv[1], encoding="utf-8", errors="replace").read().split("\n") if l != ""]
msgs, raw = [], []
for l in lines:
    try:
        msgs.append(json.loads(l))
    except ValueError:
        raw.append(l)
def r(i):
    for m in msgs:
        if isinstance(m, dict) and m.get("id") == i and ("result" in m or "error" in m):
            return m
    return None
def text(i):
    return r(i)["result"]["content"][0]["text"]
def err(i):
    return r(i)["error"]["code"]
def notes(method):
    return [m for m in msgs if isinstance(m, dict) and m.get("method") == method]
try:
    good = eval(sys.argv[2])
except Exception as e:
    good = False
    print("# %s: %r" % (type(e).__name__, e))
if not good:
    for l in lines[:20]:
        print("#   " + l[:300])
sys.exit(0 if good else 1)
EOF
	ok $? "$1"
}

init='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fakes_test","version":"1"}}}'
inited='{"jsonrpc":"2.0","method":"notifications/initialized"}'
call() { # call ID TOOL ARGUMENTS-JSON
	printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n' "$1" "$2" "$3"
}
list() { # list ID [CURSOR]
	if [ $# -gt 1 ]; then
		printf '{"jsonrpc":"2.0","id":%s,"method":"tools/list","params":{"cursor":"%s"}}\n' "$1" "$2"
	else
		printf '{"jsonrpc":"2.0","id":%s,"method":"tools/list"}\n' "$1"
	fi
}
# P ARGS...: the probe with stdin from the caller; $tmp/out, $tmp/err, $rc.
P() {
	timeout 30 "$probe" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
ms_now() { date +%s%3N; }

# ---- the probe ---------------------------------------------------------------

{ echo "$init"; echo "$inited"; echo '{"jsonrpc":"2.0","id":1,"method":"ping"}'; } | P
ok $rc "the probe exits 0 at end of input"
jcheck "initialize answers 2025-11-25, its capabilities, serverInfo" "$tmp/out" \
	'r(0)["result"] == {"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True}, "prompts": {"listChanged": True}, "logging": {}, "completions": {}}, "serverInfo": {"name": "mcpgate-probe", "version": "1"}}'
jcheck "notifications/initialized gets no answer; ping answers {}" "$tmp/out" \
	'len(msgs) == 2 and r(1)["result"] == {} and r(1)["jsonrpc"] == "2.0"'

v='{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"%s"}}\n'
printf "$v" 1 2025-06-18 2 2025-03-26 3 1999-01-01 | P
jcheck "initialize echoes 2025-06-18 and 2025-03-26, answers 2025-11-25 to others" "$tmp/out" \
	'[r(i)["result"]["protocolVersion"] for i in (1, 2, 3)] == ["2025-06-18", "2025-03-26", "2025-11-25"]'
printf "$v" 1 2025-06-18 | P --protocol 2024-11-05
jcheck "--protocol forces the answer's version" "$tmp/out" 'r(1)["result"]["protocolVersion"] == "2024-11-05"'

all_tools='["echo","env","write_file","connect","raw","read_file","status","syscalls","slow","progress","crash","garbage","huge","stderr","changed","touch","log","ask_sampling","ask_elicitation","ask_roots","notify","state","reflect","answer","places","seccomp"]'
{ echo "$init"; list 1; } | P
jcheck "tools/list offers every tool in one page" "$tmp/out" \
	"[t['name'] for t in r(1)['result']['tools']] == $all_tools and 'nextCursor' not in r(1)['result']"
jcheck "every tool has a description and an inputSchema object with properties and required" "$tmp/out" \
	'all(t["description"] and t["inputSchema"]["type"] == "object" and isinstance(t["inputSchema"]["properties"], dict) and isinstance(t["inputSchema"]["required"], list) for t in r(1)["result"]["tools"])'
jcheck "annotations where natural (echo read-only, write_file destructive)" "$tmp/out" \
	'r(1)["result"]["tools"][0]["annotations"]["readOnlyHint"] is True and r(1)["result"]["tools"][2]["annotations"]["destructiveHint"] is True'

{ list 1; list 2 6; list 3 12; list 6 18; list 7 24; list 4 99; list 5 x; } | P --page-size 6
jcheck "--page-size 6 pages 6, 6, 6, 6, 2 with nextCursor \"6\", \"12\", \"18\", \"24\"" "$tmp/out" \
	'[len(r(i)["result"]["tools"]) for i in (1, 2, 3, 6, 7)] == [6, 6, 6, 6, 2] and r(1)["result"]["nextCursor"] == "6" and r(2)["result"]["nextCursor"] == "12" and r(3)["result"]["nextCursor"] == "18" and r(6)["result"]["nextCursor"] == "24" and "nextCursor" not in r(7)["result"]'
jcheck "the pages together are the whole list" "$tmp/out" \
	"[t['name'] for i in (1, 2, 3, 6, 7) for t in r(i)['result']['tools']] == $all_tools"
jcheck "a bad cursor is -32602" "$tmp/out" 'err(4) == -32602 and err(5) == -32602'

{ list 1; call 2 env '{"name":"HOME"}'; } | P --tools echo,status
jcheck "--tools echo,status offers only those; others are unknown (-32602)" "$tmp/out" \
	'[t["name"] for t in r(1)["result"]["tools"]] == ["echo", "status"] and err(2) == -32602'
echo '{}' | P --tools echo,nosuch
ok $((rc != 2)) "--tools with an unknown name is a usage error (exit 2)"
echo '{}' | P --bogus
ok $((rc != 2)) "an unknown argument is a usage error (exit 2)"

{ list 1; call 2 files.read '{"text":"hi"}'; call 3 echo '{"text":"hi"}'; } |
	P --echo-name $'files.read\n[x]'
jcheck "--echo-name offers echo under that name, called by it (and not as echo)" "$tmp/out" \
	'r(1)["result"]["tools"][0]["name"] == "files.read\n[x]" and err(2) == -32602 and err(3) == -32602'
{ call 1 files.read '{"text":"hi"}'; } | P --echo-name files.read
jcheck "--echo-name: a call by the name is echo's" "$tmp/out" 'text(1) == "hi"'

{ list 1; } | P --describe-suffix " [second build]"
jcheck "--describe-suffix changes every description" "$tmp/out" \
	'all(t["description"].endswith(" [second build]") for t in r(1)["result"]["tools"])'

# echo: escapes, surrogate pairs, control characters, a lone surrogate
{
	call 1 echo '{"text":"plain"}'
	call 2 echo '{"text":"tab\there \"quoted\" back\\slash \u00e9\u4e2d\ud83d\ude00 nl\n cr\r nul\u0000 bell\u0007"}'
	call 3 echo '{"text":"lone \ud800 surrogate"}'
	call 4 echo '{"text":"raw ü€😀"}'
	call 5 echo '{"text":42}'
	call 6 echo '{}'
} | P
jcheck "echo returns its text" "$tmp/out" 'text(1) == "plain" and "isError" not in r(1)["result"] and r(1)["result"]["content"][0]["type"] == "text"'
jcheck "echo round-trips escapes, \\u pairs and control characters" "$tmp/out" \
	'text(2) == "tab\there \"quoted\" back\\slash \u00e9\u4e2d\U0001F600 nl\n cr\r nul\x00 bell\x07"'
jcheck "a lone surrogate becomes U+FFFD; raw UTF-8 passes" "$tmp/out" \
	'text(3) == "lone \ufffd surrogate" and text(4) == "raw ü€😀"'
jcheck "a wrong or missing argument is an isError result" "$tmp/out" \
	'r(5)["result"]["isError"] is True and r(6)["result"]["isError"] is True and text(5).startswith("invalid arguments")'

{ call 1 env '{"name":"FAKES_TEST_VAR"}'; call 2 env '{"name":"FAKES_TEST_UNSET"}'; call 3 env '{"name":"A=B"}'; } |
	FAKES_TEST_VAR='va"lue ü' P
jcheck "env returns a variable's value" "$tmp/out" 'text(1) == "va\"lue ü" and "isError" not in r(1)["result"]'
jcheck "env of an unset variable: isError, text \"unset\"" "$tmp/out" \
	'text(2) == "unset" and r(2)["result"]["isError"] is True and r(3)["result"]["isError"] is True'

{
	call 1 write_file "{\"path\":\"$tmp/written\"}"
	call 2 write_file "{\"path\":\"$tmp/nodir/x\"}"
	call 3 write_file "{\"path\":\"$tmp/written2\",\"text\":\"hello\"}"
} | P
jcheck "write_file creates the file (ok) or says error: <strerror>" "$tmp/out" \
	'text(1) == "ok" and text(2) == "error: No such file or directory" and r(2)["result"]["isError"] is True and text(3) == "ok"'
[ "$(cat "$tmp/written")" = probe ] && [ "$(cat "$tmp/written2")" = hello ]
ok $? "write_file wrote the default text and the given text"

# connect: a listener on loopback, and a port nobody listens on
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
c = socket.socket(); c.bind(("127.0.0.1", 0)); closed = c.getsockname()[1]; c.close()
print(s.getsockname()[1], closed, flush=True)
time.sleep(60)
' >"$tmp/ports" &
bg_pids+=($!)
lpid=$!
for _ in $(seq 100); do [ -s "$tmp/ports" ] && break; sleep 0.05; done
read -r lport cport <"$tmp/ports"
{
	call 1 connect "{\"host\":\"127.0.0.1\",\"port\":$lport}"
	call 2 connect "{\"host\":\"127.0.0.1\",\"port\":$cport}"
	call 3 connect "{\"host\":\"localhost\",\"port\":\"$lport\"}"
	call 4 connect '{"host":"127.0.0.1","port":70000}'
	call 5 connect '{"host":"no-such-host.invalid","port":80}'
} | P
kill "$lpid" 2>/dev/null
jcheck "connect reaches a loopback listener (numeric and by name)" "$tmp/out" 'text(1) == "connected" and text(3) == "connected"'
jcheck "connect to a closed port: isError, error: Connection refused" "$tmp/out" \
	'text(2) == "error: Connection refused" and r(2)["result"]["isError"] is True'
jcheck "connect: a bad port and an unknown name are isError" "$tmp/out" \
	'r(4)["result"]["isError"] is True and text(5).startswith("error: ") and r(5)["result"]["isError"] is True'

{ call 1 status '{}'; } | P
jcheck "status reports uid, capeff, nonewprivs, hostname, pid" "$tmp/out" \
	'(lambda s: isinstance(s["uid"], int) and all(c in "0123456789abcdef" for c in s["capeff"]) and len(s["capeff"]) == 16 and s["nonewprivs"] in (0, 1) and isinstance(s["hostname"], str) and s["pid"] > 1)(json.loads(text(1)))'

t0=$(ms_now)
{ call 1 slow '{"ms":300}'; } | P
t1=$(ms_now)
jcheck "slow answers \"slept 300\"" "$tmp/out" 'text(1) == "slept 300"'
[ $((t1 - t0)) -ge 300 ]
ok $? "slow took at least 300 ms ($((t1 - t0)) ms)"

{
	echo '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"steps":3,"ms":5},"_meta":{"progressToken":"tok-1"}}}'
	echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"progress","arguments":{"steps":2,"ms":1},"_meta":{"progressToken":7}}}'
	call 3 progress '{"steps":2,"ms":1}'
} | P
jcheck "progress sends notifications/progress 1..steps with the token, then done" "$tmp/out" \
	'[(m["params"]["progressToken"], m["params"]["progress"], m["params"]["total"]) for m in notes("notifications/progress")] == [("tok-1", 1, 3), ("tok-1", 2, 3), ("tok-1", 3, 3), (7, 1, 2), (7, 2, 2)] and text(1) == "done" and text(3) == "done"'
jcheck "progress notifications come before the answer" "$tmp/out" \
	'msgs.index(r(1)) == 3 and msgs[3]["id"] == 1'

{ call 1 echo '{"text":"a"}'; call 2 crash '{"code":7}'; call 3 echo '{"text":"b"}'; } | P
ok $((rc != 7)) "crash exits with its code (got $rc)"
jcheck "crash does not answer, and nothing after it runs" "$tmp/out" 'text(1) == "a" and r(2) is None and r(3) is None'

{ call 1 garbage '{}'; call 2 echo '{"text":"after"}'; } | P
jcheck "garbage writes a non-JSON line, then answers" "$tmp/out" \
	'raw == ["this is not json {"] and text(1) == "ok" and text(2) == "after"'

{ call 1 huge '{"bytes":3000000}'; call 2 huge '{"bytes":0}'; } | P
jcheck "huge answers one line with a 3000000-letter text" "$tmp/out" \
	'len(text(1)) == 3000000 and text(1).isalpha() and text(2) == ""'

{ call 1 stderr '{"text":"to the log"}'; } | P
jcheck "stderr answers ok" "$tmp/out" 'text(1) == "ok"'
has "$tmp/err" "to the log"
ok $? "stderr wrote its text to standard error"

{ list 1; call 2 changed '{}'; list 3; } | P --describe-suffix " v2"
jcheck "changed sends notifications/tools/list_changed before its answer" "$tmp/out" \
	'msgs[1] == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} and text(2) == "ok"'
jcheck "after changed every description gains \" (changed)\"" "$tmp/out" \
	'all(t["description"].endswith(" v2 (changed)") for t in r(3)["result"]["tools"]) and not any("(changed)" in t["description"] for t in r(1)["result"]["tools"])'

# protocol errors
deep=$(printf '[%.0s' $(seq 100))$(printf ']%.0s' $(seq 100))
{
	echo '{"jsonrpc":"2.0","id":1,"method":"nosuch/method"}'
	echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nosuch"}}'
	echo '{"jsonrpc":"2.0","id":3,"method":'
	echo ''
	echo '   '
	printf '{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"\xff"}}\n'
	echo "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{\"deep\":$deep}}"
	echo '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}'
	echo '[1,2]'
	echo '{"jsonrpc":"2.0","method":"nosuch/notification"}'
	echo '{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"echo","arguments":[1]}}'
	echo '{"jsonrpc":"2.0","id":6,"result":{}}'
	printf '{"jsonrpc":"2.0","id":7,"method":"ping"}\r\n'
} | P
jcheck "an unknown method is -32601" "$tmp/out" 'err(1) == -32601'
jcheck "an unknown tool is -32602; arguments not an object is -32602" "$tmp/out" 'err(2) == -32602 and err("s") == -32602'
jcheck "bad JSON, invalid UTF-8 and nesting past 64 get -32700 with id null" "$tmp/out" \
	'[m["error"]["code"] for m in msgs if m.get("id") is None][:3] == [-32700, -32700, -32700] and r(4) is None and r(5) is None'
jcheck "a bad id or a non-object is -32600; notifications and responses get nothing" "$tmp/out" \
	'[m["error"]["code"] for m in msgs if m.get("id") is None][3:] == [-32600, -32600] and r(6) is None'
jcheck "blank lines are ignored; CRLF is accepted" "$tmp/out" 'len(msgs) == 9 and r(7)["result"] == {}'

# a 5 MB request line (buffer growth), and no newline at the very end
python3 -c '
import json
print(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x" * 5000000}}}))
print(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}), end="")
' | P
jcheck "a 5 MB request line is read whole; a last line without newline counts" "$tmp/out" \
	'len(text(1)) == 5000000 and r(2)["result"] == {}'

# resources, prompts, completion, logging
rq() { # rq ID METHOD PARAMS-JSON
	printf '{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}\n' "$1" "$2" "$3"
}
{
	rq 1 resources/list '{}'
	rq 2 resources/list '{"cursor":"2"}'
	rq 3 resources/list '{"cursor":"4"}'
	rq 4 resources/list '{"cursor":"x"}'
	rq 5 resources/templates/list '{}'
	rq 6 resources/read '{"uri":"probe://greeting"}'
	rq 7 resources/read '{"uri":"probe://echo/some text"}'
	rq 8 resources/read '{"uri":"probe://item/3"}'
	rq 9 resources/read '{"uri":"probe://nothing"}'
	rq 10 resources/read '{}'
} | P --resources 3 --page-size 2
jcheck "resources/list: two static resources, then --resources 3 items, in pages of --page-size" "$tmp/out" \
	'[x["uri"] for i in (1, 2, 3) for x in r(i)["result"]["resources"]] == ["probe://greeting", "probe://data.json", "probe://item/1", "probe://item/2", "probe://item/3"] and r(1)["result"]["nextCursor"] == "2" and "nextCursor" not in r(3)["result"] and err(4) == -32602'
jcheck "resources/templates/list: probe://echo/{text}" "$tmp/out" \
	'[x["uriTemplate"] for x in r(5)["result"]["resourceTemplates"]] == ["probe://echo/{text}"]'
jcheck "resources/read: static, template and item resources; unknown is -32002 with the uri" "$tmp/out" \
	'r(6)["result"]["contents"] == [{"uri": "probe://greeting", "mimeType": "text/plain", "text": "Hello from the probe"}] and r(7)["result"]["contents"][0]["text"] == "some text" and r(8)["result"]["contents"][0]["text"] == "item 3" and r(9)["error"]["code"] == -32002 and r(9)["error"]["data"] == {"uri": "probe://nothing"} and err(10) == -32602'

{
	rq 1 resources/subscribe '{"uri":"probe://greeting"}'
	call 2 touch '{"uri":"probe://greeting"}'
	call 3 touch '{"uri":"probe://data.json"}'
	rq 4 resources/unsubscribe '{"uri":"probe://greeting"}'
	call 5 touch '{"uri":"probe://greeting"}'
} | P
jcheck "touch sends notifications/resources/updated only for a subscribed uri" "$tmp/out" \
	'[m["params"] for m in notes("notifications/resources/updated")] == [{"uri": "probe://greeting"}] and text(2) == "updated" and text(3) == "not subscribed" and r(4)["result"] == {} and text(5) == "not subscribed"'

{
	rq 1 prompts/list '{}'
	rq 2 prompts/list '{"cursor":"2"}'
	rq 3 prompts/get '{"name":"greet","arguments":{"name":"Ann"}}'
	rq 4 prompts/get '{"name":"greet"}'
	rq 5 prompts/get '{"name":"nosuch"}'
	rq 6 prompts/get '{"name":"with_resource"}'
	rq 7 completion/complete '{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"}}'
	rq 8 completion/complete '{"ref":{"type":"ref/resource","uri":"probe://echo/{text}"},"argument":{"name":"text","value":"hel"}}'
	rq 9 completion/complete '{"ref":{"type":"ref/prompt","name":"plain"},"argument":{"name":"x","value":""}}'
} | P --page-size 2
jcheck "prompts/list: greet (with its argument), plain, with_resource in pages" "$tmp/out" \
	'[x["name"] for i in (1, 2) for x in r(i)["result"]["prompts"]] == ["greet", "plain", "with_resource"] and r(1)["result"]["prompts"][0]["arguments"][0]["name"] == "name"'
jcheck "prompts/get: greet uses its argument; a missing argument or unknown prompt is -32602" "$tmp/out" \
	'r(3)["result"]["messages"][0]["content"]["text"] == "Say hello to Ann." and err(4) == -32602 and err(5) == -32602 and r(6)["result"]["messages"][0]["content"]["resource"]["uri"] == "probe://greeting"'
jcheck "completion/complete for greet's name and the echo template's text" "$tmp/out" \
	'r(7)["result"]["completion"]["values"] == ["alice", "albert"] and r(8)["result"]["completion"]["values"] == ["hello", "help"] and err(9) == -32602'

{
	rq 1 logging/setLevel '{"level":"warning"}'
	rq 2 logging/setLevel '{"level":"loud"}'
	call 3 log '{"level":"error","text":"boom"}'
	call 4 state '{}'
	call 5 notify '{"method":"notifications/prompts/list_changed"}'
	call 6 notify '{"method":"notifications/x","params":{"a":1}}'
} | P
jcheck "logging/setLevel records a level (a bad one is -32602); state reports it" "$tmp/out" \
	'r(1)["result"] == {} and err(2) == -32602 and json.loads(text(4))["level"] == "warning"'
jcheck "log sends notifications/message" "$tmp/out" \
	'[m["params"] for m in notes("notifications/message")] == [{"level": "error", "logger": "probe", "data": "boom"}] and text(3) == "logged"'
jcheck "notify sends the notification it is given" "$tmp/out" \
	'len(notes("notifications/prompts/list_changed")) == 1 and notes("notifications/x")[0]["params"] == {"a": 1}'

# ask_*: the request goes out, other messages are served meanwhile, the answer is the text
{
	echo '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}'
	call 1 ask_roots '{}'
	echo '{"jsonrpc":"2.0","id":2,"method":"ping"}'
	echo '{"jsonrpc":"2.0","id":"probe-ask-1","result":{"roots":[{"uri":"file:///w"}]}}'
	call 3 ask_sampling '{"text":"hi"}'
	echo '{"jsonrpc":"2.0","id":"probe-ask-2","error":{"code":-32601,"message":"refused"}}'
	call 4 ask_elicitation '{"mode":"url"}'
	echo '{"jsonrpc":"2.0","id":"probe-ask-3","result":{"action":"accept"}}'
	call 5 state '{}'
	call 7 ask_sampling '{"cancel":true}'
	call 6 ask_elicitation '{}'
} | P
jcheck "ask_roots sends roots/list, answers ping meanwhile, returns the result" "$tmp/out" \
	'msgs[1] == {"jsonrpc": "2.0", "id": "probe-ask-1", "method": "roots/list"} and r(2)["result"] == {} and json.loads(text(1)) == {"result": {"roots": [{"uri": "file:///w"}]}}'
jcheck "ask_sampling sends sampling/createMessage; an error answer is an isError text" "$tmp/out" \
	'notes("sampling/createMessage")[0]["params"]["messages"][0]["content"]["text"] == "hi" and json.loads(text(3)) == {"error": {"code": -32601, "message": "refused"}} and r(3)["result"]["isError"] is True'
jcheck "ask_elicitation in url mode; state reports the client's capabilities" "$tmp/out" \
	'notes("elicitation/create")[0]["params"]["mode"] == "url" and json.loads(text(4)) == {"result": {"action": "accept"}} and json.loads(text(5))["capabilities"] == {"roots": {}}'
jcheck "ask_sampling with cancel sends the request, then notifications/cancelled for it" "$tmp/out" \
	'notes("notifications/cancelled")[0]["params"] == {"requestId": notes("sampling/createMessage")[1]["id"], "reason": "probe changed its mind"} and text(7) == "cancelled"'
jcheck "a request of the probe's whose answer never comes: the end of input is the answer" "$tmp/out" \
	'notes("elicitation/create")[1]["params"]["mode"] == "form" and r(6)["result"]["isError"] is True'

{ for i in 1 2 3 4; do call $i echo "{\"text\":\"$i\"}"; done; } | P --crash-after 2
ok $((rc != 1)) "--crash-after 2 exits 1 (got $rc)"
jcheck "--crash-after 2 answers two calls, then nothing" "$tmp/out" 'text(1) == "1" and text(2) == "2" and r(3) is None'

{ echo "$init"; } | P --garbage-first --huge-first 100000 --stderr-banner "probe banner"
jcheck "--garbage-first and --huge-first print their lines before anything else" "$tmp/out" \
	'len(raw) == 2 and raw[0] == "this is not json {" and len(raw[1]) == 100000 and raw[1].isalpha() and r(0) is not None'
has "$tmp/err" "probe banner"
ok $? "--stderr-banner writes its text to stderr"

t0=$(ms_now)
{ echo "$init"; } | P --initialize-delay 300
t1=$(ms_now)
[ $((t1 - t0)) -ge 300 ] && [ "$(wc -l <"$tmp/out")" -eq 1 ]
ok $? "--initialize-delay 300 delays the initialize answer ($((t1 - t0)) ms)"

# --barrier: two probes started together both answer; one alone gives up
mkdir "$tmp/barrier" "$tmp/barrier1"
echo "$init" | timeout 30 "$probe" --barrier "$tmp/barrier:2" --barrier-timeout 10000 >"$tmp/b1" 2>&1 &
b1=$!
echo "$init" | timeout 30 "$probe" --barrier "$tmp/barrier:2" --barrier-timeout 10000 >"$tmp/b2" 2>&1 &
b2=$!
wait $b1
r1=$?
wait $b2
r2=$?
ok $((r1 + r2)) "--barrier DIR:2: two probes started together both finish"
jcheck "--barrier DIR:2: the first answers initialize" "$tmp/b1" 'r(0)["result"]["protocolVersion"] == "2025-11-25"'
jcheck "--barrier DIR:2: the second answers initialize" "$tmp/b2" 'r(0)["result"]["protocolVersion"] == "2025-11-25"'
[ "$(ls "$tmp/barrier" | wc -l)" -eq 2 ]
ok $? "--barrier DIR:2 left one file per probe"
t0=$(ms_now)
echo "$init" | P --barrier "$tmp/barrier1:2" --barrier-timeout 300
t1=$(ms_now)
[ "$rc" -eq 3 ] && [ ! -s "$tmp/out" ] && [ $((t1 - t0)) -ge 300 ]
ok $? "--barrier DIR:2 alone gives up after --barrier-timeout with exit 3 (rc $rc, $((t1 - t0)) ms)"

# --ignore-eof: stays after its input ends, until killed
echo "$init" | "$probe" --ignore-eof >"$tmp/ie" 2>&1 &
ie=$!
bg_pids+=($ie)
sleep 0.5
kill -0 $ie 2>/dev/null
ok $? "--ignore-eof keeps running after stdin ends"
jcheck "--ignore-eof answered before the end of input" "$tmp/ie" 'r(0) is not None'
kill $ie 2>/dev/null
wait $ie 2>/dev/null
kill -0 $ie 2>/dev/null
ok $((!$?)) "--ignore-eof ends on SIGTERM"

# ---- the fake runtime ------------------------------------------------------

D=$tmp/rt
mkdir -p "$D" "$tmp/home" "$tmp/xdg"
cp "$runtime" "$D/podman"
ln "$D/podman" "$D/docker"
cp "$probe" "$D/mcpgate-probe"
hex=$(printf '0123456789abcdef%.0s' 1 2 3 4)
img=localhost/probe@sha256:$hex
echo "$img" >"$D/images"
# R CMD...: as the gateway runs a runtime, with a short fixed environment;
# extra NAME=VALUE words before CMD add variables.
R() {
	local vars=()
	while [[ $1 == *=* ]]; do
		vars+=("$1")
		shift
	done
	env -i PATH="$D:/usr/bin:/bin" HOME="$tmp/home" XDG_RUNTIME_DIR="$tmp/xdg" "${vars[@]}" \
		"$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
}
log_last() { tail -n 1 "$D/runtime-log.jsonl" >"$tmp/last"; }

R podman version
[ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = "fake-runtime 1" ]
ok $? "podman version prints fake-runtime 1"
log_last
jcheck "the log line records argv (argv[0]'s basename), the whole environment, the pid" "$tmp/last" \
	"msgs[0]['argv'] == ['podman', 'version'] and msgs[0]['env'] == {'PATH': '$D:/usr/bin:/bin', 'HOME': '$tmp/home', 'XDG_RUNTIME_DIR': '$tmp/xdg'} and isinstance(msgs[0]['pid'], int)"
R podman info --format json
[ "$rc" -eq 0 ] && grep -q '"cgroupVersion":"v2"' "$tmp/out" && grep -q '"rootless":false' "$tmp/out"
ok $? "podman info prints a rootful cgroup v2 platform by default"
R docker info --format '{{json .}}'
[ "$rc" -eq 0 ] && grep -q '"MemoryLimit":true,"PidsLimit":true' "$tmp/out"
ok $? "docker info prints a platform with both limits by default"
printf '{"host":{"cgroupVersion":"v1"}}' >"$D/info"
R podman info
[ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = '{"host":{"cgroupVersion":"v1"}}' ]
ok $? "the knob info is the whole answer"
rm -f "$D/info"
echo "Error: cannot re-exec process" >"$D/info-fails"
R podman info
[ "$rc" -eq 125 ] && has "$tmp/err" "cannot re-exec process"
ok $? "the knob info-fails fails info with its text"
rm -f "$D/info-fails"
R podman frobnicate
[ "$rc" -eq 125 ] && has "$tmp/err" "fake-runtime: unsupported command frobnicate"
ok $? "an unsupported command exits 125 and says so"

R podman image inspect --format '{{json .RepoDigests}}' "$img"
jcheck "image inspect --format {{json .RepoDigests}} by digest prints the digests" "$tmp/out" "msgs == [['$img']]"
ok $rc "image inspect of a known image exits 0"
R podman image inspect localhost/probe
jcheck "image inspect by name prints the full JSON (Id, RepoDigests, Config)" "$tmp/out" \
	"msgs[0][0]['RepoDigests'] == ['$img'] and msgs[0][0]['Id'].startswith('sha256:') and msgs[0][0]['Id'] != 'sha256:$hex' and msgs[0][0]['Config']['Entrypoint'] == ['/mcpgate-probe'] and msgs[0][0]['Config']['User'] == ''"
R podman image inspect --format '{{.Id}}' localhost/probe
jcheck "image inspect with another --format prints the full JSON" "$tmp/out" "msgs[0][0]['RepoDigests'] == ['$img']"
R podman image inspect --format '{{json .RepoDigests}}' localhost/other
[ "$rc" -eq 125 ] && [ ! -s "$tmp/out" ] && has "$tmp/err" "Error: failed to find image localhost/other: image not known"
ok $? "podman image inspect of an unknown image: exit 125, podman's message"
R docker image inspect "localhost/probe@sha256:$(printf 'f%.0s' $(seq 64))"
[ "$rc" -eq 1 ] && has "$tmp/err" "Error: No such image: localhost/probe@sha256:fff"
ok $? "docker image inspect of an unknown digest: exit 1, docker's message"
echo 400 >"$D/inspect-delay-ms"
t0=$(ms_now)
R podman image inspect "$img"
t1=$(ms_now)
rm "$D/inspect-delay-ms"
[ "$rc" -eq 0 ] && [ $((t1 - t0)) -ge 400 ]
ok $? "inspect-delay-ms delays image inspect ($((t1 - t0)) ms)"

img2=localhost/second@sha256:$(printf 'ab%.0s' $(seq 32))
R podman pull "$img2"
[ "$rc" -eq 0 ] && has "$tmp/err" "Writing manifest to image destination" && grep -qxF "$img2" "$D/images"
ok $? "podman pull by digest adds the image and says Writing manifest"
R podman image inspect --format '{{json .RepoDigests}}' "$img2"
ok $rc "a pulled image is then known"
img3=localhost/third@sha256:$(printf 'cd%.0s' $(seq 32))
R docker pull "$img3"
[ "$rc" -eq 0 ] && has "$tmp/out" "Status: Downloaded newer image" && grep -qxF "$img3" "$D/images"
ok $? "docker pull by digest adds the image and says Status: Downloaded newer image"
python3 - "$tmp/image.tar" <<'EOF2'
import io, json, sys, tarfile
index = {"schemaVersion": 2, "manifests": [{"digest": "sha256:" + "ef" * 32, "annotations": {
    "io.containerd.image.name": "mcpgate-npm-x:1.0.0", "org.opencontainers.image.ref.name": "1.0.0"}}]}
with tarfile.open(sys.argv[1], "w") as tf:
    for name, body in (("oci-layout", b"{}"), ("index.json", json.dumps(index).encode())):
        info = tarfile.TarInfo(name)
        info.size = len(body)
        tf.addfile(info, io.BytesIO(body))
EOF2
R podman load -i "$tmp/image.tar"
loaded=localhost/mcpgate-npm-x@sha256:$(printf 'ef%.0s' $(seq 32))
[ "$rc" -eq 0 ] && grep -qxF "$loaded" "$D/images"
ok $? "load -i ARCHIVE records localhost/NAME@DIGEST from its index.json"
R podman image inspect --format '{{json .RepoDigests}}' "$loaded"
ok $rc "a loaded image is then known by its pin"
R podman load -i "$tmp/out"
ok $((rc != 125)) "load of a file that is no OCI archive fails"
R podman pull localhost/probe:latest
[ "$rc" -eq 125 ] && ! grep -q latest "$D/images"
ok $? "pull of a tag (not a digest) fails"
echo "registry unreachable" >"$D/pull-fails"
R podman pull "localhost/fourth@sha256:$hex"
rm "$D/pull-fails"
[ "$rc" -eq 125 ] && has "$tmp/err" "registry unreachable" && ! grep -q fourth "$D/images"
ok $? "pull-fails: pull fails with its content on stderr, exit 125"

# run -i: only the --env variables reach the probe
{
	call 1 env '{"name":"SECRET_X"}'
	call 2 env '{"name":"SPACE_FORM"}'
	call 3 env '{"name":"OTHER"}'
	call 4 env '{"name":"PATH"}'
	call 5 env '{"name":"HOME"}'
	call 6 env '{"name":"NOT_SET_ANYWHERE"}'
	list 7
} >"$tmp/req"
env -i PATH="$D:/usr/bin:/bin" HOME="$tmp/home" SECRET_X=s3cr3t SPACE_FORM=sp OTHER=nope \
	timeout 30 podman --runtime runc run --rm -i --name c1 --label mcpgate.session=S1 \
	--label mcpgate.mcp=probe --label mcpgate.pid=$$ --env=SECRET_X --env SPACE_FORM \
	--env NOT_SET_ANYWHERE --env=LITERAL=v --network=none --read-only --cap-drop=ALL \
	--security-opt=no-new-privileges --pull=never --log-driver=none --memory=256m \
	--pids-limit=64 --tmpfs /tmp:size=64m --ulimit nofile=1024:1024 --http-proxy=false \
	--user 65534:65534 --mount=type=tmpfs,destination=/x --some-future-option=1 \
	"$img" /mcpgate-probe --tools env,echo <"$tmp/req" >"$tmp/out" 2>"$tmp/err"
rc=$?
ok $rc "run --rm -i with the gateway's options exits with the probe's status 0"
jcheck "run --env=NAME and --env NAME pass those variables with the runtime's values" "$tmp/out" \
	'text(1) == "s3cr3t" and text(2) == "sp"'
jcheck "no other variable reaches the probe (not OTHER, PATH, HOME, an unset one)" "$tmp/out" \
	'all(text(i) == "unset" for i in (3, 4, 5, 6))'
jcheck "the arguments after the image (minus /mcpgate-probe) reach the probe" "$tmp/out" \
	'[t["name"] for t in r(7)["result"]["tools"]] == ["echo", "env"]'
[ ! -e "$D/containers/c1" ]
ok $? "run --rm removes the container record when the probe exits"

{ call 1 crash '{"code":9}'; } | env -i PATH="$D:/usr/bin:/bin" timeout 30 podman run --rm -i --name c-crash "$img" >/dev/null 2>&1
ok $(($? != 9)) "run exits with the probe's exit code"

echo "$init" | env -i PATH="$D:/usr/bin:/bin" timeout 30 podman run --rm --name c-noi "$img" >"$tmp/out" 2>&1
[ "$?" -eq 0 ] && [ ! -s "$tmp/out" ]
ok $? "without -i the probe's stdin is empty"

R podman run --rm -i localhost/nosuch@sha256:$hex
[ "$rc" -eq 125 ] && has "$tmp/err" "image not known"
ok $? "run of an unknown image exits 125"
R podman run --rm -i --frobnicate "$img"
[ "$rc" -eq 125 ] && has "$tmp/err" "fake-runtime: unknown option --frobnicate"
ok $? "run with an unknown option without = exits 125: unknown option"
echo "OCI runtime error: crun: cgroups in hybrid mode not supported" >"$D/run-fails"
R podman run --rm -i --name c-fails "$img"
rm "$D/run-fails"
[ "$rc" -eq 125 ] && has "$tmp/err" "hybrid mode" && [ ! -e "$D/containers/c-fails" ]
ok $? "run-fails: run prints its content, exits 125, starts nothing"

# containers in the background: stdin from a fifo we hold open
declare -A cfd cpid
start_container() { # start_container NAME RUN-OPTIONS...
	local name=$1 fd
	shift
	mkfifo "$tmp/in-$name"
	env -i PATH="$D:/usr/bin:/bin" HOME="$tmp/home" podman run --rm -i --name "$name" "$@" \
		<"$tmp/in-$name" >"$tmp/out-$name" 2>"$tmp/err-$name" &
	cpid[$name]=$!
	bg_pids+=($!)
	exec {fd}>"$tmp/in-$name"
	cfd[$name]=$fd
	for _ in $(seq 200); do
		[ -s "$D/containers/$name" ] && break
		sleep 0.025
	done
}
record_pid() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$D/containers/$1"; }
close_input() { exec {cfd[$1]}>&-; }

start_container c2 --label mcpgate.session=S2 --label mcpgate.mcp=two --network=mcpgate-two-S2-in "$img"
jcheck "run records the container: name, labels, pid, image, networks" "$D/containers/c2" \
	"msgs[0]['name'] == 'c2' and msgs[0]['labels'] == {'mcpgate.session': 'S2', 'mcpgate.mcp': 'two'} and msgs[0]['image'] == '$img' and msgs[0]['networks'] == ['mcpgate-two-S2-in'] and msgs[0]['pid'] > 0"
c2pid=$(record_pid c2)
echo "$init" >&"${cfd[c2]}"
call 1 status '{}' >&"${cfd[c2]}"
for _ in $(seq 200); do [ "$(wc -l <"$tmp/out-c2")" -ge 2 ] && break; sleep 0.025; done
jcheck "the recorded pid is the probe's pid" "$tmp/out-c2" "json.loads(text(1))['pid'] == $c2pid"
kill -0 "$c2pid" 2>/dev/null
ok $? "the container's probe runs"
R podman network rm mcpgate-two-S2-in
R podman network create mcpgate-two-S2-in
R podman network rm mcpgate-two-S2-in
[ "$rc" -eq 2 ] && has "$tmp/err" "network is being used"
ok $? "network rm of a network a running container uses exits 2"
R podman rm c2
[ "$rc" -eq 2 ] && kill -0 "$c2pid" 2>/dev/null
ok $? "rm without --force refuses a running container (exit 2)"
R podman rm --force c2
[ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = c2 ]
ok $? "rm --force of a running container exits 0 and prints its name"
kill -0 "$c2pid" 2>/dev/null
ok $((!$?)) "rm --force killed the container's probe"
wait "${cpid[c2]}"
crc=$?
[ "$crc" -eq 137 ] && [ ! -e "$D/containers/c2" ]
ok $? "the run process ends with 137 and the record is gone (rc $crc)"
close_input c2
R podman network rm -f mcpgate-two-S2-in
ok $rc "then network rm -f removes the network"

R podman rm --force c-missing
[ "$rc" -eq 0 ] && has "$tmp/err" "no such container"
ok $? "rm --force of a missing container: no such container on stderr, exit 0"
R podman rm c-missing
ok $((rc != 1)) "rm of a missing container without --force exits 1"
R docker rm -f c-missing
[ "$rc" -eq 0 ] && has "$tmp/err" "No such container"
ok $? "docker rm -f of a missing container exits 0"
grep -qxF "start c-missing" "$D/rm-events" && grep -qxF "end c-missing" "$D/rm-events"
ok $? "every rm writes start and end lines to rm-events"
rm -f "$D/rm-events"
echo 600000 >"$D/rm-delay-ms"
"$D/podman" rm --force c-held >/dev/null 2>&1 &
held=$!
for _ in $(seq 400); do [ -s "$D/rm-events" ] && break; sleep 0.025; done
[ "$(cat "$D/rm-events")" = "start c-held" ] && kill -0 "$held" 2>/dev/null
ok $? "with rm-delay-ms an rm has started and is not done"
touch "$D/rm-release"
wait "$held"
[ "$(tail -n 1 "$D/rm-events")" = "end c-held" ]
ok $? "rm-release ends its wait; then it is done"
rm -f "$D/rm-delay-ms" "$D/rm-release" "$D/rm-events"

# ps and network ls filter by label
start_container c3 --label mcpgate.session=A --label mcpgate.mcp=x --label mcpgate.pid=1 "$img"
start_container c4 --label mcpgate.session=B --label mcpgate.mcp=y "$img"
R podman ps -a --filter label=mcpgate.session=A --format '{{.Names}}'
[ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = c3 ]
ok $? "ps -a --filter label=K=V --format {{.Names}} lists the matching container"
R podman ps -a --filter label=mcpgate.mcp --filter label=mcpgate.pid --format '{{.Names}}'
[ "$(cat "$tmp/out")" = c3 ]
ok $? "ps: every filter must match; label=K matches the key"
R docker ps -a --filter label=mcpgate.mcp --format '{{.Names}} {{.Label "mcpgate.session"}} {{index .Labels "mcpgate.mcp"}}'
[ "$(cat "$tmp/out")" = "c3 A x
c4 B y" ]
ok $? "ps --format with {{.Label \"K\"}} and {{index .Labels \"K\"}}"
R podman ps -a --filter label=mcpgate.session=A --format json
jcheck "ps --format json prints podman's array of {Names, Labels}" "$tmp/out" \
	'len(msgs[0]) == 1 and msgs[0][0]["Names"] == ["c3"] and msgs[0][0]["Labels"]["mcpgate.session"] == "A" and msgs[0][0]["State"] == "running"'
R podman ps --format '{{.Nonsense}}'
[ "$rc" -eq 125 ] && has "$tmp/err" "unsupported format"
ok $? "an unsupported --format action exits 125"
R podman rm -f c3 c4
[ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = "c3
c4" ]
ok $? "rm -f removes several containers"
wait "${cpid[c3]}" "${cpid[c4]}"
close_input c3
close_input c4
R podman ps -a --format '{{.Names}}'
[ "$rc" -eq 0 ] && [ ! -s "$tmp/out" ]
ok $? "ps -a lists nothing after rm"

# SIGTERM to the runtime reaches the probe
start_container c5 "$img" --ignore-eof
c5pid=$(record_pid c5)
kill -TERM "${cpid[c5]}"
wait "${cpid[c5]}"
crc=$?
kill -0 "$c5pid" 2>/dev/null
[ $? -ne 0 ] && [ "$crc" -eq 143 ] && [ ! -e "$D/containers/c5" ]
ok $? "SIGTERM to run is forwarded to the probe; run exits 143 (rc $crc)"
close_input c5

R podman network create --internal --disable-dns --label mcpgate.session=A --label mcpgate.mcp=x n1
[ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = n1 ]
ok $? "network create prints the name"
R podman network create --label mcpgate.session=B n2
R podman network ls --filter label=mcpgate.session=A --format '{{.Name}}'
[ "$(cat "$tmp/out")" = n1 ]
ok $? "network ls --filter label=K=V --format {{.Name}}"
R podman network ls --format '{{.Name}}'
[ "$(cat "$tmp/out")" = "n1
n2" ]
ok $? "network ls without filter lists every network"
R podman network inspect n1
jcheck "network inspect prints [{name, labels, internal}]" "$tmp/out" \
	'msgs[0][0]["name"] == "n1" and msgs[0][0]["internal"] is True and msgs[0][0]["dns_enabled"] is False and msgs[0][0]["labels"] == {"mcpgate.session": "A", "mcpgate.mcp": "x"}'
R podman network create n1
[ "$rc" -eq 125 ] && has "$tmp/err" "already exists"
ok $? "network create of an existing name exits 125"
R docker network inspect n-missing
[ "$rc" -eq 1 ] && has "$tmp/err" "No such network"
ok $? "docker network inspect of a missing network exits 1"
R podman network rm n1 n2
[ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = "n1
n2" ] && [ -z "$(ls "$D/networks")" ]
ok $? "network rm removes networks and prints their names"
R podman network rm n1
ok $((rc != 1)) "network rm of a missing network exits 1"

# concurrent invocations append whole lines
before=$(wc -l <"$D/runtime-log.jsonl")
for i in $(seq 20); do
	env -i PATH="$D:/usr/bin:/bin" BIG="$(printf 'x%.0s' $(seq 3000))" podman version >/dev/null &
done
wait
jcheck "20 concurrent invocations log 20 whole JSON lines" "$D/runtime-log.jsonl" \
	"raw == [] and len(msgs) == $before + 20"

[ -z "$(ls "$D/containers")" ]
ok $? "no container record is left behind"

echo "1..$n"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
