#!/usr/bin/env bash
# Build an image of tests/e2e/sdk2/server.mjs, the MCP server of the SDK 2.x
# (@modelcontextprotocol/server) that tests/integration/sdk2_test.py puts
# behind mcpgate, push it to the local registry on 127.0.0.1:5000 and print
# the one line to pin in mcp.toml:
#
#   localhost:5000/NAME@sha256:...
#
# Built as tests/conformance/build-fixture-image.sh builds its fixture: this
# machine's node with the libraries it loads, an empty /tmp, and at
# /app/node_modules the three packages the server loads, from the install
# tests/conformance/run.sh --install-only --era 2026-07-28 makes in
# build/conformance-2026 (pinned by tests/conformance/2026/package-lock.json):
# @modelcontextprotocol/server, @modelcontextprotocol/core and zod; packed by
# `mcpgate pack`, loaded, tagged, pushed, and the local tags removed again.
#
# usage: tests/e2e/sdk2/build-server-image.sh [--runtime podman|docker] [--name NAME] [--tag TAG]
# Environment: MCPGATE (default ./mcpgate), NODE (default /usr/bin/node; the
# packages ask for node 20 or later).
# Progress goes to stderr; stdout gets only the pinned reference.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)

runtime=
name="mcpgate-e2e-sdk2-server"
tag=1

say() { printf 'build-server-image: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
loaded=()
# shellcheck source-path=SCRIPTDIR source=../../lib/node-image.sh
. "$top/tests/lib/node-image.sh"
node_image_args 20 "$@"

node_image_prereqs
modules=$top/build/conformance-2026/node_modules
packages="@modelcontextprotocol/server @modelcontextprotocol/core zod"
for p in $packages; do
	[ -f "$modules/$p/package.json" ] ||
		die "no $p in build/conformance-2026: run tests/conformance/run.sh --install-only --era 2026-07-28"
done
major=$("$node" --version | sed -n 's/^v\([0-9]*\)\..*/\1/p')
if [ -z "$major" ] || [ "$major" -lt 20 ]; then
	die "$node is $("$node" --version); the SDK 2.x packages need node 20 or later"
fi
# beside build/conformance-2026, so the packages can be hard-linked in
node_image_work "$top/build/sdk2-image-XXXXXX"

# the root filesystem: node and what it loads, the server, its packages
# (hard links: nothing is copied)
root=$work/rootfs
node_rootfs "$node" "$root"
cp "$here/server.mjs" "$root/app/server.mjs"
mkdir -p "$root/app/node_modules/@modelcontextprotocol"
for p in $packages; do cp -al "$modules/$p" "$root/app/node_modules/$p"; done
version=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$modules/@modelcontextprotocol/server/package.json" | head -1)
say "node $("$node" --version), @modelcontextprotocol/server $version"

tar=$work/server.tar
"$mcpgate" pack --output "$tar" --folder "$root" \
	--entrypoint '["/usr/bin/node","/app/server.mjs"]' \
	--label "org.opencontainers.image.title=mcpgate-e2e-sdk2-server" \
	--label "org.opencontainers.image.version=$tag" \
	--name "$name:$tag" >/dev/null 2>"$work/pack.err" ||
	{ cat "$work/pack.err" >&2; die "mcpgate pack failed"; }
say "$(head -1 "$work/pack.err")"

load_push_pin "$runtime" "$tar" "$name" "$tag" "$work"
