"""Run records (`bench run` JSONL): read, merge shards, and sum up per arm with 95% confidence intervals."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sophrosyne.errors import ConfigError

ARM_ORDER = ("coarse", "none", "directives", "oracle")
Z95 = 1.959963984540054
# The fields that do not depend on timing: equal across two runs of the same deterministic model.
STABLE_FIELDS = ("key", "arm", "question_id", "outcome", "sql", "ex", "soft_f1", "gold_tables", "directives")
STABLE_EXPLORATION = (
    "explored",
    "over_explored",
    "final_tables",
    "extra_final",
    "tool_calls",
    "tokens_in",
    "tokens_out",
)


def read_runs(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every complete record of the given files (torn lines skipped)."""
    records: list[dict[str, Any]] = []
    for path in paths:
        if not Path(path).is_file():
            raise ConfigError(f"no run file at {path}.", hint="Give the JSONL that `bench run --out` wrote.")
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and row.get("key"):
                records.append(row)
    return records


def _order(record: dict[str, Any]) -> tuple[int, int, str, str]:
    arm = record.get("arm", "")
    qid = str(record.get("question_id", ""))
    rank = ARM_ORDER.index(arm) if arm in ARM_ORDER else len(ARM_ORDER)
    return (int(qid) if qid.isdigit() else 1 << 60, rank, qid, arm)


def merge_runs(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per (arm, question): a finished record wins over a failed one, else the first seen;
    ordered by question then arm."""
    chosen: dict[str, dict[str, Any]] = {}
    for record in records:
        key = str(record["key"])
        kept = chosen.get(key)
        if kept is None or (kept.get("outcome") == "error" and record.get("outcome") != "error"):
            chosen[key] = record
    return sorted(chosen.values(), key=_order)


def write_runs(records: list[dict[str, Any]], path: Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with Path(path).open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")


def stable_view(record: dict[str, Any]) -> dict[str, Any]:
    """A record without its timings, for comparing two runs of a deterministic model."""
    view = {k: record.get(k) for k in STABLE_FIELDS}
    exploration = record.get("exploration") or {}
    view["exploration"] = {k: exploration.get(k) for k in STABLE_EXPLORATION}
    # A step's milliseconds vary, and so does the size of a SQL tool's text (it states its elapsed time).
    view["trace"] = [{k: v for k, v in s.items() if k not in ("ms", "result_chars")} for s in record.get("trace", [])]
    return view


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion."""
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    denominator = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denominator
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denominator
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))


def mean_ci(values: list[float]) -> dict[str, float | None]:
    """Mean with a 95% normal-approximation interval (none below two values), cut at 0: every figure
    averaged here (tables, calls, tokens, seconds) is a count or a duration."""
    if not values:
        return {"mean": None, "low": None, "high": None}
    mean = statistics.fmean(values)
    if len(values) < 2:
        return {"mean": round(mean, 4), "low": None, "high": None}
    half = Z95 * statistics.stdev(values) / math.sqrt(len(values))
    return {"mean": round(mean, 4), "low": round(max(0.0, mean - half), 4), "high": round(mean + half, 4)}


def _values(records: list[dict[str, Any]], get: Callable[[dict[str, Any]], Any]) -> list[float]:
    return [float(v) for v in (get(r) for r in records) if v is not None]


def arm_figures(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of one arm (or one arm's slice): accuracy, exploration and cost, with intervals."""
    n = len(records)
    correct = sum(int(r.get("ex") or 0) for r in records)
    low, high = wilson(correct, n)

    def exploration(name: str) -> Callable[[dict[str, Any]], Any]:
        return lambda r: (r.get("exploration") or {}).get(name)

    tokens = _values(records, lambda r: _sum(exploration("tokens_in")(r), exploration("tokens_out")(r)))
    costs = _values(records, exploration("cost"))
    return {
        "questions": n,
        "ex": round(correct / n, 4) if n else 0.0,
        "ex_ci": [low, high],
        "soft_f1": _mean(_values(records, lambda r: r.get("soft_f1"))),
        "answered": sum(r.get("outcome") == "answer" for r in records),
        "gave_up": sum(r.get("outcome") == "gave_up" for r in records),
        "clarify": sum(r.get("outcome") == "clarify" for r in records),
        "errors": sum(r.get("outcome") == "error" for r in records),
        "over_exploration": mean_ci(_values(records, exploration("over_exploration"))),
        "over_exploration_rate": _mean([1.0 if v else 0.0 for v in _values(records, exploration("over_exploration"))]),
        "extra_final_tables": mean_ci(_values(records, exploration("extra_final_tables"))),
        "tool_calls": mean_ci(_values(records, exploration("tool_calls"))),
        "tokens_in": mean_ci(_values(records, exploration("tokens_in"))),
        "tokens_out": mean_ci(_values(records, exploration("tokens_out"))),
        "tokens": mean_ci(tokens),
        "wall_s": mean_ci(_values(records, exploration("wall_s"))),
        "cost": round(sum(costs), 6) if costs else None,
        "cost_per_question": _mean(costs),
        "usage_estimated": any(r.get("usage_estimated") for r in records),
    }


def _sum(a: Any, b: Any) -> float | None:
    return None if a is None and b is None else float(a or 0) + float(b or 0)


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def by_arm(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in sorted(records, key=_order):
        groups.setdefault(str(record.get("arm")), []).append(record)
    return dict(sorted(groups.items(), key=lambda kv: ARM_ORDER.index(kv[0]) if kv[0] in ARM_ORDER else 99))


def summarize_runs(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's figures: per arm, per difficulty and per database (each per arm); `summary.ex` is the
    Sophrosyne arm's (directives) when the run has it, else the first arm's."""
    records = merge_runs(records)
    arms = {arm: arm_figures(items) for arm, items in by_arm(records).items()}
    headline = "directives" if "directives" in arms else next(iter(arms), None)

    def sliced(key: str) -> dict[str, dict[str, Any]]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            groups.setdefault(str(record.get(key)), []).append(record)
        return {
            name: {arm: arm_figures(items) for arm, items in by_arm(group).items()}
            for name, group in sorted(groups.items())
        }

    return {
        "summary": {
            "questions": len({r["question_id"] for r in records}),
            "ex": arms[headline]["ex"] if headline else 0.0,
            "arm": headline,
            "records": len(records),
            "arms": {arm: {"ex": f["ex"], "questions": f["questions"]} for arm, f in arms.items()},
        },
        "arms": arms,
        "per_difficulty": sliced("difficulty"),
        "per_database": sliced("db_id"),
        "datasets": sorted({str(r.get("dataset")) for r in records}),
        "solvers": sorted({str(r.get("solver")) for r in records}),
        "models": sorted({str(r.get("model")) for r in records}),
    }
