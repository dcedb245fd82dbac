"""search_schema: the columns best matching a description, by names and descriptions (BM25 and embeddings)."""

from __future__ import annotations

from typing import Annotated, Protocol

from pydantic import Field

from sophrosyne.base.data_blocks import close_data, open_data
from sophrosyne.base.text import counted, shorten
from sophrosyne.errors import InvalidArgument
from sophrosyne.sql.lookup import table_named
from sophrosyne.tools.arguments import MAX_HITS, count
from sophrosyne.tools.base import Context, Result, Screen
from sophrosyne.tools.budget import cut_lists, fit


class SchemaHit(Result):
    table: str
    column: str
    score: float
    description: str = ""


class SchemaHits(Result):
    query: str
    hits: list[SchemaHit]
    note: str | None = None
    cut: str | None = None

    def agent_lines(self, nonce: str) -> list[str]:
        lines = [f"{counted(len(self.hits), 'column')} best matching the query:", open_data(nonce)]
        for h in self.hits:
            desc = f" — {h.description}" if h.description else ""
            lines.append(f"- {h.table}.{h.column} ({h.score:.3f}){desc}")
        lines.append(close_data(nonce))
        lines.extend(x for x in (self.note, self.cut) if x)
        return lines

    def cut_to_budget(self, budget: int) -> None:
        total = len(self.hits)

        def note(kept: dict[str, int]) -> None:
            shown = kept["hits"]
            self.cut = f"cut: showing {shown} of {total} columns (token budget)." if shown < total else None

        cut_lists(self, ["hits"], budget, note)

    def show(self, screen: Screen) -> None:
        title = screen.escape(f"columns best matching {self.query!r}")
        table = screen.grid(title, "table.column", "score", "description")
        for h in self.hits:
            table.add_row(screen.escape(f"{h.table}.{h.column}"), f"{h.score:.3f}", screen.escape(h.description))
        screen.show(table)


class Guide(Protocol):
    """What search_schema asks of the moderator (directives/moderator.py): the columns its schema index ranks first."""

    def search(self, query: str, k: int) -> list[SchemaHit]: ...


class Searcher(Context, Protocol):
    @property
    def moderator(self) -> Guide: ...


def search_schema(
    env: Searcher,
    query: Annotated[str, Field(description="What the column holds.")],
    k: Annotated[int, Field(description="How many columns.")] = 10,
    table: Annotated[str | None, Field(description="Only this table.")] = None,
) -> SchemaHits:
    """Columns matching a description (keyword and semantic search).

    Example: search_schema(query="absence date")
    """
    # BM25 and embeddings over names and descriptions, fused; with `table`, that table's columns ranked (a wide
    # table's column found without reading all of it). Every word above is paid on every connection.
    if not query.strip():
        raise InvalidArgument("search_schema needs a query.", hint="Describe the column, e.g. 'date of absence'.")
    k, capped = count(k, "k", 10, MAX_HITS)
    text = shorten(query, env.settings.limits.question_chars, at_word=True)
    if table is None:
        found = env.moderator.search(text, k)
    else:
        only = table_named(env.catalog, table, env.name).name
        # Every column ranked, then the table's kept: its columns may all rank below other tables' best.
        every = sum(len(t.columns) for t in env.catalog.tables.values())
        found = [hit for hit in env.moderator.search(text, every) if hit.table == only][:k]
    hits = SchemaHits(query=query, hits=found, note=capped)
    return fit(hits, env.settings.limits.token_budget)
