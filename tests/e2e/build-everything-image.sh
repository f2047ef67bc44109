#!/usr/bin/env bash
# Build an image of the published MCP server @modelcontextprotocol/server-everything
# (the version pinned in tests/e2e/everything/package-lock.json), push it to the
# local registry on 127.0.0.1:5000, and print the one line to pin in mcp.toml:
#
#   localhost:5000/NAME@sha256:...
#
# The image is this machine's /usr/bin/node with the shared libraries it loads
# (ldd, copied to the same paths, the dynamic loader too), the pinned
# node_modules at /app/node_modules and an empty /tmp, packed by
# `mcpgate pack` (no Dockerfile, no base image), loaded with `RUNTIME load`,
# tagged and pushed. The manifest digest comes from the registry's
# Docker-Content-Digest header. The local tags are removed again, so fetching
# the image by its digest (`mcpgate pull`) is left to the person.
#
# usage: tests/e2e/build-everything-image.sh [--runtime podman|docker] [--name NAME] [--tag TAG]
#
#   --runtime  default: podman when it is on PATH, else docker
#   --name     the repository in the registry (default mcpgate-e2e-everything)
#   --tag      the tag pushed (default 2026.8.31, the server's version)
# Environment: MCPGATE (default ./mcpgate, built by make), NODE (default
# /usr/bin/node). Needs npm, a running registry on 127.0.0.1:5000, and the
# npm registry for the first install (into build/e2e/everything, kept for the
# next run and for tests/e2e/client.mjs). Progress goes to stderr; stdout gets
# only the pinned reference.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

runtime=
name="mcpgate-e2e-everything"
tag=2026.8.31

say() { printf 'build-everything-image: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
loaded=()
# shellcheck source=../lib/node-image.sh
. "$top/tests/lib/node-image.sh"
node_image_args 25 "$@"

node_image_prereqs
command -v npm >/dev/null || die "npm is missing: apt-get install npm (scripts/setup does)"
node_image_work /tmp/mcpgate-everything-image-XXXXXX

# 1. the pinned packages, installed exactly as the lockfile says (npm ci),
#    only when the lockfile changed since the last install
modules=$top/build/e2e/everything
if ! cmp -s "$here/everything/package-lock.json" "$modules/package-lock.json" ||
	! cmp -s "$here/everything/package.json" "$modules/package.json" ||
	[ ! -f "$modules/node_modules/@modelcontextprotocol/server-everything/package.json" ]; then
	say "installing the pinned packages into $modules (npm ci)"
	mkdir -p "$modules"
	rm -f "$modules/package-lock.json"
	cp "$here/everything/package.json" "$modules/package.json"
	cp "$here/everything/package-lock.json" "$modules/package-lock.json.new"
	mv "$modules/package-lock.json.new" "$modules/package-lock.json"
	# node trusts its own CA list, not the machine's: give npm the machine's
	# bundle when nothing else is named (a registry behind the machine's CA)
	if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r /etc/ssl/certs/ca-certificates.crt ]; then
		export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
	fi
	timeout 600 npm ci --prefix "$modules" --ignore-scripts --no-audit --no-fund --loglevel=error >&2 ||
		{ rm -f "$modules/package-lock.json"; die "npm ci failed"; }
else
	say "the pinned packages are installed in $modules"
fi
entry=/app/node_modules/@modelcontextprotocol/server-everything/dist/index.js
[ -f "$modules/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ] ||
	die "the install has no ${entry#/app/}"
version=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' \
	"$modules/node_modules/@modelcontextprotocol/server-everything/package.json" | head -1)

# 2. the root filesystem: node and what it loads
root=$work/rootfs
node_rootfs "$node" "$root"

# 3. pack, load, tag, push
tar=$work/everything.tar
say "packing server-everything $version with mcpgate pack"
"$mcpgate" pack --output "$tar" --folder "$root" \
	--add "$modules/node_modules:/app/node_modules" \
	--entrypoint "[\"/usr/bin/node\",\"$entry\",\"stdio\"]" \
	--label "org.opencontainers.image.title=@modelcontextprotocol/server-everything" \
	--label "org.opencontainers.image.version=$version" \
	--name "$name:$tag" >/dev/null 2>"$work/pack.err" ||
	{ cat "$work/pack.err" >&2; die "mcpgate pack failed"; }
say "$(head -1 "$work/pack.err")"

load_push_pin "$runtime" "$tar" "$name" "$tag" "$work"
