#!/usr/bin/env bash
# mcpgate as the client under test of the MCP conformance suite:
#   conformance client --command tests/conformance/mcpgate-client.sh --scenario NAME
# The suite appends its mock server's URL and names the scenario in
# MCP_CONFORMANCE_SCENARIO. This writes a config with one remote server at
# URL, starts `mcpgate serve` and drives it over stdio (drive.py): the
# handshake, tools/list, and the scenario's calls, in the protocol version the
# suite names in MCP_CONFORMANCE_PROTOCOL_VERSION (2026-07-28: a plan per
# scenario, drive.py's MODERN_PLAN). MCPGATE names the binary (default: the
# repository's ./mcpgate).
set -u
if [ $# -ne 1 ]; then
	echo "usage: $0 URL" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
export MCPGATE="${MCPGATE:-$here/../../mcpgate}"
exec python3 "$here/drive.py" "$1"
