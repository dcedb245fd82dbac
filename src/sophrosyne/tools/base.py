"""What every tool shares: what it reads of its Environment, the result type with its three hooks, cells, and the
data-block rendering."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

from sophrosyne.base.data_blocks import close_data, escaped, new_nonce, open_data
from sophrosyne.base.text import counted, estimate_tokens, shorten
from sophrosyne.schema.catalog import Catalog, ForeignKey
from sophrosyne.settings import Settings
from sophrosyne.sql.secure import SecurePath

if TYPE_CHECKING:
    from sophrosyne.errors import SophrosyneError


class Screen(Protocol):
    """What a result's terminal hook draws on (cli/display.py gives one): tables and dim notes, escaped."""

    def grid(self, title: str | None, *columns: str) -> Any: ...  # a table with add_row(*cells)

    def show(self, table: Any) -> None: ...

    def notes(self, *lines: str | None) -> None: ...

    def plain(self, text: str) -> None: ...

    def escape(self, text: str) -> str: ...

    def text(self, value: Any) -> str: ...


class Context(Protocol):
    """What a tool reads of the Environment it runs in (environment.py): one role's view of one database.
    A tool's module names what else it needs (a moderator's answers, a grounder)."""

    settings: Settings
    secure: SecurePath

    @property
    def name(self) -> str: ...

    @property
    def url(self) -> str: ...

    @property
    def dialect(self) -> str: ...

    @property
    def catalog(self) -> Catalog: ...

    def inferred_joins(self) -> dict[str, list[ForeignKey]]: ...

    def index_leads(self) -> dict[str, set[str]] | None: ...

    def reminder(self, tables: list[str]) -> str | None: ...


class Link(BaseModel):
    """A resource an answer points to (an export's file): sent as an MCP resource link beside the text."""

    uri: str
    name: str
    mime_type: str
    size: int | None = None


class Result(BaseModel):
    """Base of the typed tool results. A tool's module gives its result the three ways it is shown or cut:
    `agent_lines` (the text an agent reads), `cut_to_budget` (which lists `budget.fit` cuts first) and
    `show` (a person's terminal); the defaults are JSON, no cut of its own, and the agent's text."""

    # Validators are built on first use, not at import: a CLI call builds only the one result it returns.
    model_config = ConfigDict(defer_build=True)

    def agent_lines(self, nonce: str) -> list[str]:
        return json_lines(self)

    def cut_to_budget(self, budget: int) -> None:
        """Cut this result's own lists to fit `budget` tokens, saying so in its note (budget.fit calls it)."""

    def show(self, screen: Screen) -> None:
        screen.plain(render(self))

    def links(self) -> list[Link]:
        """Resources the answer points to, beside its text (none by default)."""
        return []


def render(result: BaseModel, nonce: str | None = None) -> str:
    """Compact text for a tool result; every database value is inside a data block.

    Each line is escaped (data_blocks.escaped): a name, value or engine message that holds a line break stays
    on its line, in its block. Our own text has no such character, and reads as written."""
    nonce = nonce or new_nonce()
    lines = result.agent_lines(nonce) if isinstance(result, Result) else json_lines(result)
    return "\n".join(escaped(line) for line in lines)


def json_lines(result: BaseModel) -> list[str]:
    """A result without a text of its own (a part of one, or an agent's own model) as indented JSON."""
    return result.model_dump_json(indent=1).split("\n")


def render_error(error: SophrosyneError, limit: int, nonce: str | None = None) -> str:
    """The text a client reads for an error, in at most about `limit` characters: our message and hint on one
    line each, and the database's own words (which may quote data) inside a data block."""
    if not error.quoted:
        return shorten(str(error), limit)
    nonce = nonce or new_nonce()
    # A program's traceback keeps its lines; an engine's message has one.
    quoted = [escaped(line) for line in shorten(error.quoted, limit // 4).split("\n")]
    lines = [shorten(escaped(error.message), limit * 2 // 5), open_data(nonce), *quoted, close_data(nonce)]
    if error.hint:
        lines.append("Hint: " + shorten(escaped(error.hint), limit // 4))
    return "\n".join(lines)


def cell(value: Any, max_chars: int) -> Any:
    """A JSON-friendly value, long strings and bytes cut with a visible mark."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, decimal.Decimal):
        return float(value) if value == value.to_integral_value() or abs(value) < 1e15 else str(value)
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        return f"<{len(raw)} bytes>"
    return shorten(str(value), max_chars)


def cut_note(shown: int, total: int | None, what: str, why: str) -> str:
    if total is None:
        return f"cut: showing the first {shown} {what}; there are more ({why})."
    return f"cut: showing {shown} of {total} {what} ({why})."


def join_notes(*notes: str | None) -> str | None:
    joined = " ".join(n for n in notes if n)
    return joined or None


def fit_rows(columns: list[str], rows: list[list[Any]], budget_tokens: int) -> tuple[list[list[Any]], bool]:
    """Keep the leading rows whose rendering fits the token budget."""
    used = estimate_tokens(" | ".join(columns))
    kept: list[list[Any]] = []
    for row in rows:
        used += estimate_tokens(" | ".join(data_text(v) for v in row)) + 1
        if used > budget_tokens and kept:
            return kept, True
        kept.append(row)
    return kept, False


def render_table(columns: list[str], rows: list[list[Any]], nonce: str) -> str:
    """Rows as a compact pipe table inside a data block, so values cannot pose as instructions."""
    return "\n".join(table_lines(columns, rows, nonce))


def table_lines(columns: list[str], rows: list[list[Any]], nonce: str, title: str | None = None) -> list[str]:
    # Column names are the database's (or the query's aliases) as much as the values are.
    lines = [open_data(nonce), *([escaped(title)] if title else []), " | ".join(data_text(c) for c in columns)]
    lines.extend(" | ".join(data_text(v) for v in row) for row in rows)
    lines.append(close_data(nonce))
    return lines


def data_text(value: Any) -> str:
    """A value as one cell of a pipe table."""
    if value is None:
        return "NULL"
    return escaped(str(value)).replace("|", "\\|")


def rows_text(estimate: int | None, at_least: bool) -> str:
    if estimate is None:
        return "rows unknown"
    return f"at least {counted(estimate, 'row')}" if at_least else f"~{counted(estimate, 'row')}"
