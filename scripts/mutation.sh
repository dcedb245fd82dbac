#!/usr/bin/env bash
# Mutation benchmark of the secured path (sql/guard.py, sql/rendering.py, sql/shape.py, sql/secure.py, sql/policy/),
# run on purpose.
#
#   scripts/mutation.sh [OUT_DIR] [MUTANT_GLOB...]
#   scripts/mutation.sh bench-out/mutation 'sophrosyne.sql.shape*'     # one module
#
# mutmut (pinned in the test extras, configured in pyproject's [tool.mutmut]) mutates a copy of the tree, so the
# checkout is never touched, and runs for each mutant only the fast tests that reach the mutated function.
# It writes OUT_DIR/results.txt (every mutant and its status), OUT_DIR/stats.json (the counts) and
# OUT_DIR/survivors.diff (each surviving mutant's diff), and prints the score. About 35 minutes on 2 busy cores.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/bench-out/mutation}")
shift || true
python=${PYTHON:-$root/.venv/bin/python}
[ -x "$python" ] || python=$(command -v python)
work=$(mktemp -d "${TMPDIR:-/tmp}/sophrosyne-mutation.XXXXXX")
# KEEP=1 keeps the copy (its mutants/ holds every mutant, for `mutmut show` or a re-run of some).
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

mkdir -p "$out"
cp -r "$root/src" "$root/tests" "$root/examples" "$root/docs" "$root/README.md" "$root/pyproject.toml" "$work/"
find "$work" -name __pycache__ -prune -exec rm -rf {} +
cd "$work"
# The copy's tests find the shared datasets where the checkout's would; the copy's source, not an installed one.
export SOPHROSYNE_DATASETS=${SOPHROSYNE_DATASETS:-$(realpath -m "$root/../shared/datasets")}
unset PYTHONPATH
started=$(date +%s)
"$python" -m mutmut run --max-children "${MUTMUT_CHILDREN:-2}" "$@" >"$out/run.log" 2>&1 || {
    tail -40 "$out/run.log"
    exit 1
}
"$python" -m mutmut results --all true >"$out/results.txt"
"$python" -m mutmut export-cicd-stats >/dev/null
cp mutants/mutmut-cicd-stats.json "$out/stats.json"
: >"$out/survivors.diff"
{ grep -E ': (survived|no tests)$' "$out/results.txt" || true; } | sed -E 's/^ *([^:]+):.*/\1/' | while read -r name; do
    "$python" -m mutmut show "$name" >>"$out/survivors.diff" 2>&1 || true
done
[ -z "${KEEP:-}" ] || echo "kept: $work"
"$python" - "$out/stats.json" "$(($(date +%s) - started))" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
# `total` counts every mutant generated, those a module glob left out too: the score is of those tested.
tested = s["killed"] + s["survived"] + s["timeout"] + s["suspicious"] + s["no_tests"]
caught = s["killed"] + s["timeout"]
print(f"mutants {s['total']}: killed {s['killed']}, timeout {s['timeout']}, survived {s['survived']}, "
      f"no tests {s['no_tests']}, suspicious {s['suspicious']}, skipped {s['skipped']}; "
      f"score {100 * caught / max(tested, 1):.1f}% in {int(sys.argv[2]) // 60} min")
EOF
