#!/usr/bin/env bash
# The MCP conformance suite against `sophrosyne serve demo --http`: every scenario passes but those that
# tests/conformance/expected-failures.yml lists as not claimed (with why). Node 22 comes from the npm registry
# when the machine's is older. Usage: scripts/conformance.sh [SOPHROSYNE_COMMAND]
set -euo pipefail
cd "$(dirname "$0")/.."
sophrosyne="${1:-.venv/bin/sophrosyne}"
tools="${CONFORMANCE_DIR:-$PWD/.conformance}"
. scripts/node_tools.sh
node_tools "$tools" conformance @modelcontextprotocol/conformance@0.1.16
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
log="$(mktemp)"
"$sophrosyne" serve demo --http --port "$port" >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 60); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  kill -0 "$server" 2>/dev/null || { cat "$log"; echo "the server exited"; exit 1; }
  sleep 1
done
"$tools/node_modules/.bin/conformance" server --url "http://127.0.0.1:$port/mcp" \
  --expected-failures tests/conformance/expected-failures.yml
