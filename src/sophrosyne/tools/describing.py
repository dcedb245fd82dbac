"""What describe_table says of a table: each column's type, keys, null share and real samples, in pages."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sophrosyne.base.text import shorten
from sophrosyne.schema.catalog import ForeignKey, Table
from sophrosyne.tools.budget import cut_lists, fit, fits
from sophrosyne.tools.results import ColumnInfo, TableDescription, cell


def column_infos(
    t: Table,
    start: int,
    columns: list[str],
    rows: list[tuple[Any, ...]],
    samples: int,
    value_chars: int,
    keys: list[ForeignKey] | None = None,
) -> list[ColumnInfo]:
    """The columns of `t` from `start` on, with null shares and the commonest values of the sampled rows.

    `keys`: the table's joins, declared then inferred (default: its declared foreign keys); a declared key
    wins over an inferred one on the same column."""
    index = {c.lower(): i for i, c in enumerate(columns)}
    by_column = list(zip(*rows, strict=True)) if rows else []
    fk_of = {col.lower(): fk for fk in reversed(t.foreign_keys if keys is None else keys) for col in fk.columns}
    infos = []
    for c in t.columns[start:]:
        i = index.get(c.name.lower())
        values = by_column[i] if i is not None and by_column else ()
        counts = Counter(values)
        counts.pop(None, None)
        key = "PK" if c.primary_key else None
        fk = fk_of.get(c.name.lower())
        if fk is not None:
            target = f"FK -> {fk.ref_table}.{fk.ref_columns[fk.columns.index(c.name)] if c.name in fk.columns else ''}"
            target += f" (inferred, {fk.confidence:.2f})" if fk.inferred else ""
            key = f"{key}, {target}" if key else target
        desc = "; ".join(p for p in (c.readable_name, c.description, c.value_description) if p)
        infos.append(
            ColumnInfo(
                name=c.name,
                type=c.type,
                key=key,
                nullable=c.nullable,
                description=shorten(desc, 200),
                null_share=round(values.count(None) / len(values), 3) if values else None,
                samples=[cell(v, value_chars) for v, _ in counts.most_common(samples)],
            )
        )
    return infos


def paged(described: TableDescription, start: int, total: int, budget: int) -> TableDescription:
    """The description within `budget`: as many columns from `start` as fit, and how to see the next ones."""
    if start >= total and total:
        described.cut = f"offset {start} is past the last of the {total} columns."
    if fits(described, budget):
        return described
    cut = described.model_copy(deep=True)

    def note(kept: dict[str, int]) -> None:
        shown = kept["columns"]
        cut.cut = None
        if start + shown < total:
            cut.cut = (
                f"cut: showing columns {start + 1}-{start + shown} of {total} (token budget). Next: "
                f"describe_table(table={shorten(described.table, 80)!r}, offset={start + shown})."
            )

    cut_lists(cut, ["columns"], budget, note)
    return fit(cut, budget)
