"""Join candidates checked by value inclusion within a time budget, and resumed where a budget cut them."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sophrosyne.schema.catalog import Catalog
from sophrosyne.schema.joins import InferredJoin, candidate_joins

Sample = Callable[[str, str, int], list[Any]]
"""sample(table, column, limit): distinct non-null values of a column, read through the secured path."""
Probe = Callable[[str, str, list[Any]], set[Any]]
"""probe(table, column, values): which of `values` the column holds, read through the secured path."""

# Bumped when inference changes what it finds or how it is saved: a saved inference of another version is redone.
# 2: a column naming many equally likely tables names none (joins._unambiguous); unchecked candidates saved.
# 3: a warehouse key word after a key word (`SET_CODE_KEY`) is also read without it; compact one-word keys
#    (`actid`) join the table they lead; a column named as a table (`scientist`) joins it.
JOINS_VERSION = 3


@dataclass
class JoinInference:
    """The inferred joins of a catalog, and what they rest on (names only, or values too)."""

    joins: list[InferredJoin] = field(default_factory=list)
    confirmed: int = 0  # joins whose values were checked and found
    rejected: int = 0  # candidates whose values were checked and not found
    unchecked: int = 0  # candidates left on names alone (no data reachable, unreadable, or out of time)
    note: str = ""
    # Positions in `joins` of the candidates a time budget left unchecked (kept meanwhile on their names):
    # `resume_joins` checks them later.
    pending: list[int] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every candidate that could be checked was: no time budget cut the checks."""
        return not self.pending

    def as_dict(self) -> dict[str, Any]:
        """The inference as JSON data, for the cache (`from_dict` reads it back; never code, as pickle is)."""
        joins = [
            [j.table, list(j.columns), j.ref_table, list(j.ref_columns), j.confidence, j.evidence] for j in self.joins
        ]
        counts = {"confirmed": self.confirmed, "rejected": self.rejected, "unchecked": self.unchecked}
        return {"joins": joins, **counts, "note": self.note, "pending": self.pending}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JoinInference:
        """Read back what `as_dict` wrote; KeyError, TypeError or ValueError when it is not that."""
        joins = [
            InferredJoin(str(t), tuple(map(str, c)), str(r), tuple(map(str, rc)), float(conf), str(ev))
            for t, c, r, rc, conf, ev in data["joins"]
        ]
        pending = [int(i) for i in data["pending"]]
        if any(not 0 <= i < len(joins) for i in pending) or pending != sorted(set(pending)):
            raise ValueError("a pending candidate outside the saved joins")
        counts = int(data["confirmed"]), int(data["rejected"]), int(data["unchecked"])
        return cls(joins, *counts, str(data["note"]), pending)


def joins_key(catalog: Catalog, checked: bool, sample_size: int = 50) -> str:
    """A hash of everything join inference reads: each table's name and kind, its columns (name, type, key)
    in their order, its primary and foreign keys, in catalog order (among equally sure candidates the first
    found wins); and whether values were checked. A table or column added, a type changed or a key declared
    changes it, so a saved inference is never reused for another schema (data changes do not: as for the value
    index, `sophrosyne index --rebuild` reads them again)."""
    digest = hashlib.sha256(repr((JOINS_VERSION, checked, sample_size)).encode())
    for t in catalog.tables.values():
        columns = [(c.name, c.type, c.primary_key) for c in t.columns]
        keys = [(fk.columns, fk.ref_table, fk.ref_columns, fk.inferred) for fk in t.foreign_keys]
        digest.update(repr((t.name, t.kind, columns, t.primary_key, keys)).encode())
    return digest.hexdigest()


def infer_joins(
    catalog: Catalog,
    sample: Sample | None = None,
    probe: Probe | None = None,
    budget_s: float = 5.0,
    sample_size: int = 50,
    stop: Callable[[], bool] | None = None,
) -> JoinInference:
    """Candidates from names and types; with `sample` and `probe` (the secured path), each checked by value
    inclusion, likeliest first, until `budget_s` runs out. Checked and found: confidence at least 0.95;
    checked and mostly absent: dropped; unchecked: the confidence of the names, and pending when the budget
    cut it (`resume_joins` checks the rest)."""
    candidates = candidate_joins(catalog)
    if sample is None or probe is None:
        note = "inferred from names and types only: no data was reachable to confirm them"
        return JoinInference(candidates, unchecked=len(candidates), note=note)
    unchecked = JoinInference(candidates, unchecked=len(candidates), pending=list(range(len(candidates))))
    return resume_joins(unchecked, sample, probe, budget_s, sample_size, stop)


def resume_joins(
    inference: JoinInference,
    sample: Sample,
    probe: Probe,
    budget_s: float,
    sample_size: int = 50,
    stop: Callable[[], bool] | None = None,
    at_least: int = 0,
) -> JoinInference:
    """The inference with its pending candidates checked, likeliest first, until `budget_s` runs out (once
    `at_least` are checked: a budget shorter than one check still makes progress) or `stop()` says so; the
    rest stay pending."""
    deadline = time.monotonic() + budget_s
    checks = 0
    result = JoinInference(confirmed=inference.confirmed, rejected=inference.rejected)
    waiting = set(inference.pending)
    for position, join in enumerate(inference.joins):
        if position not in waiting:
            result.joins.append(join)
            continue
        if (checks >= at_least and time.monotonic() > deadline) or (stop is not None and stop()):
            result.pending.append(len(result.joins))
            result.joins.append(join)
            continue
        checked = _check(join, sample, probe, sample_size)
        checks += 1
        if checked is None:
            result.rejected += 1
        else:
            result.joins.append(checked)
            result.confirmed += checked is not join
    result.unchecked = len(result.joins) - result.confirmed
    result.note = (
        f"{result.confirmed} confirmed by values, {result.rejected} rejected, {result.unchecked} on names alone"
        + ("" if result.complete else f" ({len(result.pending)} not checked yet: time budget reached)")
    )
    return result


def _check(join: InferredJoin, sample: Sample, probe: Probe, sample_size: int) -> InferredJoin | None:
    """The join as its values show it: confirmed (a new join), in part (a new, less sure join), absent (None),
    or the same join when its values could not be read (it stays on its names)."""
    try:
        values = [v for v in sample(join.table, join.columns[0], sample_size) if v is not None]
        hits = probe(join.ref_table, join.ref_columns[0], values) if values else set()
    except Exception:  # an unreadable column leaves the candidate on its names
        return join
    if not values:
        return join
    # Compared as text: a key kept as a number in one table and as a string in the other still joins.
    share = len({str(v) for v in hits} & {str(v) for v in values}) / len({str(v) for v in values})
    if share >= 0.8:
        evidence = f"values: {len(hits)} of {len(values)} sampled found"
        return replace(join, confidence=max(0.95, join.confidence), evidence=evidence)
    if share >= 0.3:
        return replace(join, confidence=round(join.confidence * 0.7, 3), evidence="values, in part")
    return None
