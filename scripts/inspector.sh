#!/usr/bin/env bash
# MCP Inspector 2.x against `sophrosyne serve demo` (stdio): its CLI lists and gets the prompts, lists the
# resources and their template and reads one; its client completes a prompt's and a template's arguments (the
# CLI has no completion method). Each answer is checked. Node 22 comes from the npm registry when the
# machine's is older. Usage: scripts/inspector.sh [SOPHROSYNE_COMMAND]
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
