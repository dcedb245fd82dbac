"""The schema directives work on: shard groups folded into units, twins tied, joins inferred where undeclared."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sophrosyne.directives.units import Units, fold_units
from sophrosyne.index.cache import joins_path, read_json, write_json
from sophrosyne.schema.catalog import Catalog
from sophrosyne.schema.joins import JoinInference, Probe, Sample, infer_joins, joins_key, with_joins


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
    start on the same schema; one cut by its time budget is not saved, so a later start may check the rest."""
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
    saved = read_json(path)
    if saved is not None:
        try:
            return JoinInference.from_dict(saved)
        except (KeyError, TypeError, ValueError):
            pass  # a damaged entry is inferred again and overwritten
    joins = infer_joins(catalog, sample, probe, budget_s)
    if joins.complete:
        write_json(path, joins.as_dict())
    return joins
