"""The schema directives work on: shard groups folded into units, twins tied, joins inferred where undeclared."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sophrosyne.directives.units import Units, fold_units
from sophrosyne.index.cache import joins_path, read_json, write_json
from sophrosyne.schema.catalog import Catalog
from sophrosyne.schema.join_checks import JoinInference, Probe, Sample, infer_joins, joins_key, resume_joins
from sophrosyne.schema.joins import with_joins


@dataclass
class PreparedSchema:
    """A role's catalog as directives see it: one table per unit, declared and inferred joins."""

    catalog: Catalog
    units: Units
    joins: JoinInference


def prepare_schema(
    catalog: Catalog,
    sample: Sample | None = None,
    probe: Probe | None = None,
    budget_s: float = 5.0,
    infer: bool = True,
    cache_dir: Path | None = None,
) -> PreparedSchema:
    """Fold shards into units, then infer joins between the units (confirmed by values when `sample` and
    `probe` reach the data) and add them to the catalog as inferred foreign keys.

    With `cache_dir`, an inference is saved under a key of what it read (`joins_key`) and reused by the next
    start on the same schema, one cut by its time budget too (with what it has not checked yet, on names
    alone): `complete_joins` checks the rest later, and saves it for the start after."""
    units = fold_units(catalog)
    if not infer:
        joins = JoinInference(note="not inferred")
    elif cache_dir is None:
        joins = infer_joins(units.catalog, sample, probe, budget_s)
    else:
        joins = _cached_joins(units.catalog, sample, probe, budget_s, cache_dir)
    return PreparedSchema(with_joins(units.catalog, joins.joins), units, joins)


def _cached_joins(
    catalog: Catalog, sample: Sample | None, probe: Probe | None, budget_s: float, cache_dir: Path
) -> JoinInference:
    path = joins_path(cache_dir, joins_key(catalog, checked=sample is not None and probe is not None))
    saved = _read(path)
    if saved is not None:
        return saved
    joins = infer_joins(catalog, sample, probe, budget_s)
    write_json(path, joins.as_dict())
    return joins


def _read(path: Path) -> JoinInference | None:
    data = read_json(path)
    if not isinstance(data, dict):
        return None
    try:
        return JoinInference.from_dict(data)
    except (KeyError, TypeError, ValueError):
        return None  # a damaged entry is inferred again and overwritten


def complete_joins(
    catalog: Catalog,
    sample: Sample,
    probe: Probe,
    cache_dir: Path,
    slice_s: float = 5.0,
    stop: Callable[[], bool] | None = None,
) -> JoinInference:
    """Check what the saved inference of this schema left unchecked, `slice_s` at a time, saving after each
    slice, until every candidate is checked or `stop()` says so (a slice that `stop` cut is not saved: its
    reads may have failed because the database closed). Infers first when nothing is saved."""
    catalog = fold_units(catalog).catalog
    path = joins_path(cache_dir, joins_key(catalog, checked=True))
    joins = _read(path)
    if joins is None:
        joins = infer_joins(catalog, sample, probe, slice_s, stop=stop)
        if stop is not None and stop():
            return joins
        write_json(path, joins.as_dict())
    while not joins.complete:
        more = resume_joins(joins, sample, probe, slice_s, stop=stop, at_least=1)
        if stop is not None and stop():
            break
        joins = more
        write_json(path, joins.as_dict())
    return joins
