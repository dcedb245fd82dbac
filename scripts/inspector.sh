#!/usr/bin/env bash
# MCP Inspector 2.x against `sophrosyne serve demo` (stdio): its CLI lists and gets the prompts, lists the
# resources and their template and reads one; its client completes a prompt's and a template's arguments (the
# CLI has no completion method). Then `serve demo --http` behind a policy whose identity provider is the tests'
# (scripts/identity_provider.py): the CLI lists and calls the tools with its JWT and with a static token, and is
# refused without one. Each answer is checked. Node 22 comes from the npm registry when the machine's is older.
# Usage: scripts/inspector.sh [SOPHROSYNE_COMMAND]
set -euo pipefail
cd "$(dirname "$0")/.."
sophrosyne="$(realpath "${1:-.venv/bin/sophrosyne}")"
tools="${INSPECTOR_DIR:-$PWD/.inspector}"
. scripts/node_tools.sh
node_tools "$tools" mcp-inspector @modelcontextprotocol/inspector@2.12.0
inspect() { timeout 120 "$tools/node_modules/.bin/mcp-inspector" --cli -q --format json "$sophrosyne" serve demo "$@"; }
check() {  # check NAME PYTHON-CONDITION-ON-r < JSON
  python3 -c "import json, sys; r = json.load(sys.stdin); ok = $2; print('inspector:', '$1', 'ok' if ok else 'FAILED'); sys.exit(0 if ok else 1)"
}
inspect --method prompts/list | check "prompts/list" \
  "{p['name'] for p in r['result']['prompts']} >= {'explore', 'ground'}"
inspect --method prompts/get --prompt-name explore --prompt-args "question=Which department has the most employees?" \
  | check "prompts/get explore" "'list_tables' in r['result']['messages'][0]['content']['text'] and 'most employees' in json.dumps(r)"
inspect --method resources/list | check "resources/list" \
  "'sophrosyne://demo/employees' in [x['uri'] for x in r['result']['resources']]"
inspect --method resources/templates/list | check "resources/templates/list" \
  "[t['uriTemplate'] for t in r['result']['resourceTemplates']] == ['sophrosyne://{source}/{table}']"
inspect --method resources/read --uri sophrosyne://demo/employees | check "resources/read" \
  "'hire_date' in r['result']['contents'][0]['text']"
cp scripts/inspector_completions.mjs "$tools/"
timeout 120 node "$tools/inspector_completions.mjs" "$sophrosyne" serve demo 2>/dev/null | tail -n 1 | check "completion/complete" \
  "r == {'prompt_table': ['employees'], 'prompt_column': ['hire_date'], 'prompt_source': ['demo'], 'resource_table': ['departments']}"

# Over streamable HTTP behind a policy: the tests' identity provider (scripts/identity_provider.py: keys made for
# the run, JWKS on 127.0.0.1) issues a JWT; with it, and with the policy's static token, the CLI lists the tools
# and calls one as the token's role (`--header "Authorization: Bearer ..."`); without a token, or with a forged
# one, it is refused. Both processes are stopped by their PIDs.
python="$(dirname "$sophrosyne")/python"
work="$(mktemp -d)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$python" scripts/identity_provider.py "$work" "$port" >"$work/idp.log" 2>&1 &
idp=$!
server=""
trap 'kill "$idp" ${server:+"$server"} 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 60); do
  [ -f "$work/token" ] && break
  kill -0 "$idp" 2>/dev/null || { cat "$work/idp.log"; echo "the identity provider exited"; exit 1; }
  sleep 0.5
done
"$sophrosyne" serve demo --http --port "$port" --policy "$work/policy.toml" >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 60); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.log"; echo "the server exited"; exit 1; }
  sleep 1
done
url="http://127.0.0.1:$port/mcp"
over_http() {  # over_http TOKEN ARGS...: the CLI against the server, with the token when it is not empty
  local token="$1"
  shift
  if [ -n "$token" ]; then
    timeout 120 "$tools/node_modules/.bin/mcp-inspector" --cli -q --format json "$url" --transport http \
      --header "Authorization: Bearer $token" "$@"
  else
    timeout 120 "$tools/node_modules/.bin/mcp-inspector" --cli -q --format json "$url" --transport http "$@"
  fi
}
refused() {  # refused NAME TOKEN: the CLI fails for want of authorization (the server's 401 sends it to OAuth,
  # which --stored-auth-only forbids), and lists nothing
  local answer status=0
  answer="$(over_http "$2" --stored-auth-only --method tools/list 2>&1)" || status=$?
  if [ "$status" -ne 0 ] && grep -Eq '"auth_required"|401' <<<"$answer" && ! grep -q execute_sql <<<"$answer"; then
    echo "inspector: $1 refused ok"
  else
    echo "inspector: $1 refused FAILED (exit $status): $answer"
    exit 1
  fi
}
jwt="$(cat "$work/token")"
static="$(cat "$work/static_token")"
for who in jwt static; do
  token="${!who}"
  over_http "$token" --method tools/list | check "tools/list with the $who token" \
    "{'list_tables', 'execute_sql'} <= {t['name'] for t in r['result']['tools']}"
  over_http "$token" --method tools/call --tool-name execute_sql --tool-arg "sql=SELECT COUNT(*) AS n FROM employees" \
    | check "tools/call execute_sql with the $who token" \
      "not r['result'].get('isError') and r['result']['structuredContent']['rows'][0][0] > 0"
done
# The JWT's role (analyst) is denied absence_records; the static token's (admin) is not.
# (The CLI exits 5 for a tool error; its answer is checked instead.)
{ over_http "$jwt" --method tools/call --tool-name describe_table --tool-arg table=absence_records 2>/dev/null || true; } \
  | check "the JWT role (analyst) applies" \
    "r['result'].get('isError') is True and 'absence_records' in r['result']['content'][0]['text']"
over_http "$static" --method tools/call --tool-name describe_table --tool-arg table=absence_records \
  | check "the static token role (admin) applies" "not r['result'].get('isError')"
refused "no token" ""
refused "a forged token" "${jwt%.*}.$(printf 'x%.0s' $(seq 1 40))"
refused "an unknown static token" "not-$static"
