"""The schema directives work on: shard groups folded into units, twins tied, joins inferred where undeclared."""

from __future__ import annotations

from dataclasses import dataclass

from sophrosyne.directives.units import Units, fold_units
from sophrosyne.schema.catalog import Catalog
from sophrosyne.schema.joins import JoinInference, Probe, Sample, infer_joins, with_joins


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
) -> PreparedSchema:
    """Fold shards into units, then infer joins between the units (confirmed by values when `sample` and
    `probe` reach the data) and add them to the catalog as inferred foreign keys."""
    units = fold_units(catalog)
    joins = infer_joins(units.catalog, sample, probe, budget_s) if infer else JoinInference(note="not inferred")
    return PreparedSchema(with_joins(units.catalog, joins.joins), units, joins)
