#!/usr/bin/env bash
# `mcpgate client`: the entry written in a client's own file, in a home
# folder of our own: files and folders made, modes kept, symbolic links
# followed, --dry-run writing nothing, bad files left alone with a
# FILE:LINE:COL message, what the entry runs, usage errors.
# Run from the repository top; $MCPGATE names the binary (default ./mcpgate).
set -u
mcpgate=${MCPGATE:-./mcpgate}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib/tap.sh"

home="$tmp/home"
ws="$tmp/work space"
mkdir -p "$home" "$ws" "$tmp/conf"
export HOME="$home" PATH=/usr/bin:/bin
unset XDG_CONFIG_HOME CODEX_HOME CLAUDE_CONFIG_DIR
self=$(realpath "$mcpgate")
client() { run "$mcpgate" client "$@"; }
mode() { stat -c %a "$1"; }
# the entry NAME of the servers object KEY in a JSON file (whole-line comments
# dropped), as "TYPE COMMAND ARG..."
entry() {
	python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
lines = [l for l in open(sys.argv[1]) if not l.lstrip().startswith("//")]
e = json.loads("".join(lines))[sys.argv[2]][sys.argv[3]]
print(" ".join([e.get("type", "-"), e["command"]] + e["args"]))
EOF
}

# ---- usage ---------------------------------------------------------------
run "$mcpgate" help client
ok $(( rc != 0 )) "help client exits 0"
has "$out" "--dry-run"; ok $? "and shows the options"
run "$mcpgate" --help
has "$out" "client"; ok $? "--help lists client"
client
ok $(( rc != 2 )) "client without an action is a usage error"
client add
ok $(( rc != 2 )) "add without a client is a usage error"
has "$errout" "claude-desktop, claude-code, cursor, vscode, windsurf, zed, codex, gemini"
ok $? "and lists the clients"
client add emacs
ok $(( rc != 2 )) "an unknown client is a usage error"
has "$errout" 'unknown client "emacs"'; ok $? "and names it"
client add cursr
has "$errout" 'unknown client "cursr"; did you mean "cursor"?'; ok $? "a near miss names the client meant"
client rmove cursor
has "$errout" 'unknown action "rmove"; did you mean "remove"?'; ok $? "and the action meant"
client add cursor --bogus
ok $(( rc != 2 )) "an unknown option is a usage error"
client add cursor --scope team
ok $(( rc != 2 )) "an unknown scope is a usage error"
client add cursor --name "my gate"
ok $(( rc != 2 )) "a name with a space is a usage error"
client remove cursor --config "$tmp/conf"
ok $(( rc != 2 )) "--config belongs to add"
client list cursor
ok $(( rc != 2 )) "list takes no client"
client add windsurf --scope project --workspace "$ws"
ok $(( rc != 1 )) "a scope the client has no file for fails"
has "$errout" "Windsurf has no project file"; ok $? "and says so"
client add cursor --workspace "$tmp/nowhere"
ok $(( rc != 1 )) "a workspace that is not there fails"
has "$errout" "workspace $tmp/nowhere"; ok $? "and names it"

# ---- list, and a first add that makes the file -----------------------------
client list --workspace "$ws"
ok $(( rc != 0 )) "list exits 0"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 13 ]; ok $? "one line per client's file (13)"
has "$out" "cursor          user*    no file            $home/.cursor/mcp.json"
ok $? "cursor's user file, the default, is not there yet"
has "$out" "vscode          project* no file            $ws/.vscode/mcp.json"
ok $? "VS Code's default is the workspace's .vscode/mcp.json"
has "$out" "codex           user*    no file            $home/.codex/config.toml"
ok $? "Codex's file is ~/.codex/config.toml"

(cd "$ws" && "$self" client add cursor --dry-run >"$tmp/out" 2>"$tmp/err")
rc=$?
ok $(( rc != 0 )) "--dry-run of a new file exits 0"
has "$(cat "$tmp/out")" "--- /dev/null"; ok $? "and shows the file as new"
has "$(cat "$tmp/out")" "+      \"command\": \"$self\","; ok $? "with the entry's command"
[ ! -e "$home/.cursor" ]; ok $? "and makes neither the file nor its folder"

(cd "$ws" && "$self" client add cursor >"$tmp/out" 2>"$tmp/err")
ok $? "add cursor from the workspace exits 0"
has "$(cat "$tmp/out")" "added \"mcpgate\" to $home/.cursor/mcp.json (Cursor)"; ok $? "and says so"
[ "$(entry "$home/.cursor/mcp.json" mcpServers mcpgate)" = "- $self serve --workspace $ws" ]
ok $? "the entry runs this binary's real path with the current folder as workspace"
[ "$(mode "$home/.cursor")" = 700 ] && [ "$(mode "$home/.cursor/mcp.json")" = 600 ]
ok $? "a new folder is 0700 and a new file 0600"
cp "$home/.cursor/mcp.json" "$tmp/first"
client add cursor --workspace "$ws"
ok $(( rc != 0 )) "a second add exits 0"
has "$out" "already as it would be written"; ok $? "and says there is nothing to do"
cmp -s "$home/.cursor/mcp.json" "$tmp/first"; ok $? "and the file is as it was"
client list --workspace "$ws"
has "$out" "cursor          user*    entry mcpgate      $home/.cursor/mcp.json"
ok $? "list shows the entry"

# ---- an existing file: the rest kept, its mode kept, dry run ----------------
mkdir -p "$home/.gemini"
cat >"$home/.gemini/settings.json" <<'EOF'
{
  "theme": "GitHub",
  // what Gemini CLI starts
  "mcpServers": {
    "github": {"httpUrl": "https://api.githubcopilot.com/mcp/"}
  }
}
EOF
chmod 640 "$home/.gemini/settings.json"
cp "$home/.gemini/settings.json" "$tmp/gemini.orig"
touch -d '2026-01-02 03:04:05' "$home/.gemini/settings.json"
client add gemini --workspace "$ws" --dry-run
ok $(( rc != 0 )) "--dry-run exits 0"
has "$out" "@@ -2,6 +2,10 @@"; ok $? "and prints the hunk: lines 2-7 become 2-11"
has "$out" '-    "github": {"httpUrl": "https://api.githubcopilot.com/mcp/"}'; ok $? "with the line it changes"
has "$out" '+    "mcpgate": {'; ok $? "and the lines it adds"
has "$errout" "dry run: $home/.gemini/settings.json is not written"; ok $? "and says nothing is written"
cmp -s "$home/.gemini/settings.json" "$tmp/gemini.orig" &&
	[ "$(stat -c %Y "$home/.gemini/settings.json")" = "$(date -d '2026-01-02 03:04:05' +%s)" ]
ok $? "the file is untouched, its time too"
client add gemini --workspace "$ws" --config "$tmp/conf"
ok $(( rc != 0 )) "add gemini with --config exits 0"
[ "$(entry "$home/.gemini/settings.json" mcpServers mcpgate)" = "- $self serve --workspace $ws --config $tmp/conf" ]
ok $? "the entry passes --config"
[ "$(mode "$home/.gemini/settings.json")" = 640 ]; ok $? "the file keeps its mode 0640"
has "$(cat "$home/.gemini/settings.json")" "// what Gemini CLI starts"; ok $? "and its comment"
client remove gemini
ok $(( rc != 0 )) "remove exits 0"
has "$out" "removed \"mcpgate\" from $home/.gemini/settings.json"; ok $? "and says so"
cmp -s "$home/.gemini/settings.json" "$tmp/gemini.orig"; ok $? "add then remove gives back the file byte for byte"
client remove gemini
ok $(( rc != 0 )) "removing again exits 0"
has "$out" "no mcpgate entry \"mcpgate\""; ok $? "and says there is nothing to do"
client remove windsurf
has "$out" "does not exist: nothing to do"; ok $? "removing from a file not there does nothing"
[ ! -e "$home/.codeium" ]; ok $? "and makes nothing"

# ---- a symbolic link is followed -------------------------------------------
mkdir -p "$tmp/dotfiles" "$home/.config/zed"
printf '{\n  "vim_mode": true\n}\n' >"$tmp/dotfiles/zed.json"
ln -s "$tmp/dotfiles/zed.json" "$home/.config/zed/settings.json"
client add zed --workspace "$ws"
ok $(( rc != 0 )) "add zed through a symbolic link exits 0"
[ -L "$home/.config/zed/settings.json" ]; ok $? "the link stays a link"
[ "$(entry "$tmp/dotfiles/zed.json" context_servers mcpgate)" = "- $self serve --workspace $ws" ]
ok $? "and its target has the entry"

# ---- files that are not right are left as they are --------------------------
printf '{\n  "mcpServers": {\n    "a": {"command": "x"}\n    "b": {}\n  }\n}\n' >"$tmp/bad.json"
cp "$tmp/bad.json" "$tmp/bad.orig"
client add claude-desktop --file "$tmp/bad.json" --workspace "$ws"
ok $(( rc != 1 )) "a file that is not JSON fails"
has "$errout" "$tmp/bad.json:4:5: expected ',' or '}' after a member"; ok $? "naming the file, line and column"
cmp -s "$tmp/bad.json" "$tmp/bad.orig"; ok $? "and the file is unchanged"
printf '{"mcpServers": []}\n' >"$tmp/kind.json"
client add claude-desktop --file "$tmp/kind.json" --workspace "$ws"
ok $(( rc != 1 )) "a servers member of the wrong kind fails"
has "$errout" "$tmp/kind.json:1:16: \"mcpServers\" is an array, not an object"; ok $? "naming the key"
printf '{"mcpServers": {"mcpgate": {"command": "npx", "args": ["other"]}}}\n' >"$tmp/theirs.json"
cp "$tmp/theirs.json" "$tmp/theirs.orig"
client add cursor --file "$tmp/theirs.json" --workspace "$ws"
ok $(( rc != 1 )) "an entry of that name that is not mcpgate's is refused"
has "$errout" "is not mcpgate's (it runs \"npx\")"; ok $? "and the message says whose it is"
client remove cursor --file "$tmp/theirs.json"
ok $(( rc != 1 )) "and remove refuses it too"
cmp -s "$tmp/theirs.json" "$tmp/theirs.orig"; ok $? "the file is unchanged"
client add cursor --file "$tmp/theirs.json" --name gate --workspace "$ws"
ok $(( rc != 0 )) "under another name the entry is added beside it"
[ "$(entry "$tmp/theirs.json" mcpServers gate)" = "- $self serve --workspace $ws" ]
ok $? "named as asked"
client add cursor --file "$tmp/theirs.json" --scope user
ok $(( rc != 2 )) "--file with --scope is a usage error"
printf 'model = "o3"\n[mcp_servers\n' >"$tmp/bad.toml"
client add codex --file "$tmp/bad.toml"
ok $(( rc != 1 )) "a file that is not TOML fails"
has "$errout" "$tmp/bad.toml:2:" ; ok $? "naming the file and line"

# ---- project files, TOML, and what the command is ---------------------------
client add vscode --workspace "$ws"
ok $(( rc != 0 )) "add vscode exits 0"
[ "$(entry "$ws/.vscode/mcp.json" servers mcpgate)" = "stdio $self serve --workspace $ws" ]
ok $? "the workspace's .vscode/mcp.json has a stdio entry"
[ "$(mode "$ws/.vscode")" = 755 ] && [ "$(mode "$ws/.vscode/mcp.json")" = 644 ]
ok $? "a project's new folder is 0755 and file 0644"
client add claude-code --scope project --workspace "$ws"
[ "$(entry "$ws/.mcp.json" mcpServers mcpgate)" = "stdio $self serve --workspace $ws" ]
ok $? "--scope project writes Claude Code's .mcp.json"

mkdir -p "$tmp/codex"
CODEX_HOME="$tmp/codex" run "$mcpgate" client add codex --workspace "$ws"
ok $(( rc != 0 )) "add codex exits 0"
python3 - "$tmp/codex/config.toml" "$self" "$ws" <<'EOF'
import sys, tomllib
e = tomllib.load(open(sys.argv[1], "rb"))["mcp_servers"]["mcpgate"]
sys.exit(0 if e == {"command": sys.argv[2], "args": ["serve", "--workspace", sys.argv[3]]} else 1)
EOF
ok $? "CODEX_HOME/config.toml has [mcp_servers.mcpgate], as Python's tomllib reads it"

mkdir -p "$tmp/bin" "$tmp/other"
ln -s "$self" "$tmp/bin/mcpgate"
PATH="$tmp/bin:/usr/bin:/bin" run "$mcpgate" client add cursor --file "$tmp/path.json" --workspace "$ws"
[ "$(entry "$tmp/path.json" mcpServers mcpgate)" = "- $tmp/bin/mcpgate serve --workspace $ws" ]
ok $? "the mcpgate on PATH is written when it is this binary"
printf '#!/bin/sh\n' >"$tmp/other/mcpgate"
chmod +x "$tmp/other/mcpgate"
PATH="$tmp/other:$tmp/bin:/usr/bin:/bin" run "$mcpgate" client add cursor --file "$tmp/path.json" --workspace "$ws"
[ "$(entry "$tmp/path.json" mcpServers mcpgate)" = "- $self serve --workspace $ws" ]
ok $? "and this binary's real path when the first mcpgate on PATH is another"
has "$out" "replaced \"mcpgate\" in $tmp/path.json"; ok $? "which replaces the entry"

tap_done
