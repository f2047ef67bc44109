#!/usr/bin/env bash
# The MCP conformance suite's 2026-07-28 client scenarios with mcpgate as the
# client (run.sh --era 2026-07-28): a program of its own, so that the test
# runner (tests/run-unit, which passes no arguments) runs both eras.
exec "$(dirname "$0")/run.sh" --era 2026-07-28 "$@"
