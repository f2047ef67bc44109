# What the scripts that put a Node.js MCP server into a pinned image share
# (tests/e2e/build-everything-image.sh, tests/conformance/build-fixture-image.sh,
# tests/e2e/sdk2/build-server-image.sh). Sourced after the caller defines say
# and die and an array `loaded`, whose references node_image_work's cleanup
# removes from the runtime.

# node_image_args HELP_LAST "$@": --runtime, --name and --tag into runtime,
# name and tag (the caller sets their defaults), --era into era when the
# caller has one (set before), --help prints the caller's comment lines 2 to
# HELP_LAST. Dies naming anything else.
node_image_args() {
	local help_last=$1
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--runtime) runtime=${2:?--runtime needs podman or docker}; shift 2 ;;
		--name) name=${2:?--name needs a value}; shift 2 ;;
		--tag) tag=${2:?--tag needs a value}; shift 2 ;;
		--era)
			[ -n "${era+set}" ] || die "unknown argument --era (see --help)"
			era=${2:?--era needs 2025-11-25 or 2026-07-28}; shift 2 ;;
		-h | --help) sed -n "2,${help_last}p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) die "unknown argument $1 (see --help)" ;;
		esac
	done
}

# node_image_work TEMPLATE: the local registry must answer on 127.0.0.1:5000
# (registry is set to its URL); work is a new folder (mktemp -d TEMPLATE),
# removed at exit together with every reference in loaded.
node_image_work() {
	registry=http://127.0.0.1:5000
	curl -fsS -o /dev/null --max-time 5 "$registry/v2/" ||
		die "no registry answers on $registry (start one: docker-registry serve CONFIG, as tests/integration/run.sh and scripts/demo do)"
	work=$(mktemp -d "$1")
	trap node_image_cleanup EXIT
	trap 'exit 130' INT TERM
}

node_image_cleanup() {
	local ref
	for ref in "${loaded[@]}"; do "$runtime" rmi "$ref" >/dev/null 2>&1 || true; done
	rm -rf "$work"
}

# node_image_prereqs: what both scripts need before anything is built. Sets
# runtime (podman when on PATH, else docker, unless given), mcpgate
# ($MCPGATE, else the tree's) and node ($NODE, else /usr/bin/node); top must
# be set. Dies naming what is missing.
node_image_prereqs() {
	if [ -z "$runtime" ]; then
		if command -v podman >/dev/null; then runtime=podman; else runtime=docker; fi
	fi
	case $runtime in podman | docker) ;; *) die "--runtime must be podman or docker, not $runtime" ;; esac
	command -v "$runtime" >/dev/null ||
		die "$runtime is not installed (scripts/setup installs podman and docker.io)"
	mcpgate=${MCPGATE:-$top/mcpgate}
	[ -x "$mcpgate" ] || die "$mcpgate is not built: run make"
	node=${NODE:-/usr/bin/node}
	[ -x "$node" ] || die "$node is missing: apt-get install nodejs npm (scripts/setup does)"
}

# node_rootfs NODE ROOT: ROOT gets this machine's node at /usr/bin/node, every
# library it loads and the loader at the paths it was linked with, an empty
# /tmp (for the tmpfs mcpgate mounts there) and /app. ldd runs node's loader
# on it: it is this machine's own node, trusted as such.
node_rootfs() {
	local node=$1 root=$2 libs lib
	mkdir -p "$root/usr/bin" "$root/tmp" "$root/app"
	cp -L "$node" "$root/usr/bin/node"
	libs=$(ldd "$node" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
		sort -u || true)
	for lib in $libs; do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	if [ -n "$libs" ]; then
		say "node $("$node" --version) and $(echo "$libs" | wc -l) libraries: $(echo "$libs" | tr '\n' ' ')"
	else
		say "node $("$node" --version), statically linked: no libraries to copy"
	fi
}

# load_push_pin RUNTIME TAR NAME TAG WORK: load the archive, tag it for the
# local registry on 127.0.0.1:5000, push it, and print the one line to pin
# in mcp.toml, localhost:5000/NAME@sha256:... (the local tags go in `loaded`)
load_push_pin() {
	local runtime=$1 tar=$2 name=$3 tag=$4 work=$5 out local_ref push_ref digest
	local tls=()
	say "loading it into $runtime"
	out=$("$runtime" load -i "$tar" 2>&1) || { echo "$out" >&2; die "$runtime load failed"; }
	local_ref=$(printf '%s\n' "$out" | sed -n 's/^Loaded image[^:]*: *//p' | tail -1)
	[ -n "$local_ref" ] || { echo "$out" >&2; die "$runtime load named no image"; }
	loaded+=("$local_ref")
	push_ref=localhost:5000/$name:$tag
	"$runtime" tag "$local_ref" "$push_ref"
	loaded+=("$push_ref")
	say "pushing $push_ref"
	[ "$runtime" = podman ] && tls=(--tls-verify=false)
	"$runtime" push "${tls[@]}" "$push_ref" >"$work/push.log" 2>&1 ||
		{ tail -20 "$work/push.log" >&2; die "$runtime push failed"; }
	digest=$(curl -fsS --max-time 10 -I \
		-H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
		"http://127.0.0.1:5000/v2/$name/manifests/$tag" | tr -d '\r' |
		awk 'tolower($1) == "docker-content-digest:" {print $2}')
	case $digest in
	sha256:????????????????????????????????????????????????????????????????) ;;
	*) die "the registry gave no manifest digest for $name:$tag" ;;
	esac
	say "pushed; the local tags are removed again (mcpgate pull fetches it by digest)"
	echo "localhost:5000/$name@$digest"
}
