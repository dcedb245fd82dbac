"""describe_table: each column's type, keys, null share and real samples, foreign keys both ways, in pages."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Annotated, Any, Protocol

from pydantic import Field

from sophrosyne.base.data_blocks import close_data, open_data
from sophrosyne.base.text import one_line, shorten
from sophrosyne.errors import InvalidArgument
from sophrosyne.schema.catalog import ForeignKey, Table
from sophrosyne.sql.lookup import table_named
from sophrosyne.sql.queries import select_all
from sophrosyne.tools.base import Context, Result, Screen, cell, join_notes, rows_text
from sophrosyne.tools.budget import cut_lists, fit, fits
from sophrosyne.tools.list_tables import join_key


class ColumnInfo(Result):
    name: str
    type: str
    key: str | None = None
    nullable: bool = True
    description: str = ""
    null_share: float | None = None
    samples: list[Any] = Field(default_factory=list)


class TableDescription(Result):
    table: str
    kind: str
    description: str = ""
    row_estimate: int | None = None
    rows_at_least: bool = False
    columns: list[ColumnInfo]
    references: list[str] = Field(default_factory=list, description="foreign keys of this table")
    referenced_by: list[str] = Field(default_factory=list, description="foreign keys pointing at this table")
    sampled_rows: int = 0
    reminder: str | None = None
    cut: str | None = None

    def agent_lines(self, nonce: str) -> list[str]:
        rows = rows_text(self.row_estimate, self.rows_at_least)
        lines = [
            f"{self.kind} {self.table} ({rows}); columns with null share and samples from {self.sampled_rows:,} rows:"
        ]
        if self.reminder:
            lines.append(self.reminder)
        lines.append(open_data(nonce))
        if self.description:
            lines.append(f"description: {self.description}")
        for c in self.columns:
            key = f" {c.key}" if c.key else ""
            null = ""
            if c.null_share:
                null = " null <1%" if c.null_share < 0.01 else f" null {c.null_share:.0%}"
            desc = f" — {c.description}" if c.description else ""
            samples = f" e.g. {', '.join(repr(s) for s in c.samples)}" if c.samples else ""
            lines.append(f"- {c.name} {c.type}{key}{null}{desc}{samples}")
        if self.references:
            lines.append("references: " + ", ".join(self.references))
        if self.referenced_by:
            lines.append("referenced by: " + ", ".join(self.referenced_by))
        lines.append(close_data(nonce))
        if self.cut:
            lines.append(self.cut)
        return lines

    def cut_to_budget(self, budget: int) -> None:
        total = len(self.columns)
        base = self.cut

        def note(kept: dict[str, int]) -> None:
            shown = kept["columns"]
            more = "" if shown == total else f"cut: showing {shown} of {total} columns (token budget)."
            self.cut = join_notes(base, more or None)

        cut_lists(self, ["referenced_by", "references", "columns"], budget, note)

    def show(self, screen: Screen) -> None:
        rows = f"~{self.row_estimate:,} rows" if self.row_estimate is not None else "rows unknown"
        title = f"{self.kind} {screen.escape(self.table)} ({rows}; samples from {self.sampled_rows:,} rows)"
        table = screen.grid(title, "column", "type", "key", "null", "samples", "description")
        for c in self.columns:
            null = "" if c.null_share is None else f"{c.null_share:.0%}"
            samples = ", ".join(repr(v) for v in c.samples)
            e = screen.escape
            table.add_row(e(c.name), e(c.type), e(c.key or ""), null, e(samples), e(c.description))
        screen.show(table)
        screen.notes(
            self.description,
            "references: " + ", ".join(self.references) if self.references else None,
            "referenced by: " + ", ".join(self.referenced_by) if self.referenced_by else None,
            self.reminder,
            self.cut,
        )


class Guide(Protocol):
    """What describe_table asks of the moderator (directives/moderator.py): a reminder of what directives named."""

    def reminder(self, tables: Iterable[str]) -> str | None: ...


class Describer(Context, Protocol):
    @property
    def moderator(self) -> Guide: ...


def describe_table(
    env: Describer,
    table: Annotated[str, Field(description="Table name.")],
    offset: Annotated[int | None, Field(description="Skip this many (next page).")] = None,
) -> TableDescription:
    """Columns with type, keys, description, null share and sample values; foreign keys both ways.

    Example: describe_table(table="employees")
    """
    # A table too wide for the token budget is shown in pages of columns (`offset` for the next page).
    t = table_named(env.catalog, table, env.name)
    start = offset or 0
    if start < 0:
        raise InvalidArgument(f"`offset` must be 0 or more, not {start}.", hint="Leave it out to start at the top.")
    settings = env.settings
    limit = settings.reading.sample_rows
    result = env.secure.query(select_all(t, env.dialect, limit), limit=limit)
    joins = env.inferred_joins()
    own = [*t.foreign_keys, *joins.get(t.name, [])]
    columns = column_infos(
        t, start, result.columns, result.rows, settings.reading.sample_values, settings.limits.value_chars, own
    )
    described = TableDescription(
        table=t.name,
        kind=t.kind,
        description=one_line(t.description),
        row_estimate=t.row_estimate,
        rows_at_least=t.rows_at_least,
        columns=columns,
        references=[join_key(fk) for fk in own],
        referenced_by=[
            f"{name}.{', '.join(fk.columns)} -> {', '.join(fk.ref_columns)}"
            + (f" (inferred, {fk.confidence:.2f})" if fk.inferred else "")
            for name, fk in [
                *env.catalog.references_to(t.name),
                *((n, fk) for n, fks in joins.items() for fk in fks if fk.ref_table == t.name),
            ]
        ],
        sampled_rows=len(result.rows),
        reminder=env.moderator.reminder([t.name]),
    )
    return paged(described, start, len(t.columns), settings.limits.token_budget)


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
