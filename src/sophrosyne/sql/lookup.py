"""Names an agent gives, looked up in the catalog: the table or column meant, or an error that names the fix."""

from __future__ import annotations

import re

from sqlglot import exp

from sophrosyne.base.text import shorten
from sophrosyne.errors import QueryFailed, SophrosyneError, UnknownColumn, UnknownTable
from sophrosyne.schema.catalog import Catalog, Column, Table

# The longest name quoted back in an error: the name came from the caller, and may be huge.
SHOWN_NAME = 80


def table_named(catalog: Catalog, name: str, source: str) -> Table:
    """The table `name` means: exactly as given, else with case ignored, else without the quotes or brackets
    around it (`"Order Details"`, `[Order Details]`); else UnknownTable with the closest names."""
    table = catalog.table(name) or catalog.table(_unquoted(name))
    if table is None:
        shown = shorten(name, SHOWN_NAME)
        raise UnknownTable(
            f"no table `{shown}` in {source}.", hint=did_you_mean(shown, catalog.table_names, "list_tables")
        )
    return table


def column_named(table: Table, name: str) -> Column:
    """The column of `table` that `name` means (as `table_named` reads it), else UnknownColumn."""
    column = table.column(name) or table.column(_unquoted(name))
    if column is None:
        shown = shorten(name, SHOWN_NAME)
        raise UnknownColumn(
            f"no column `{shown}` in `{shorten(table.name, SHOWN_NAME)}`.",
            hint=did_you_mean(shown, table.column_names, f"describe_table('{table.name}')"),
        )
    return column


def _unquoted(name: str) -> str:
    """A name without one pair of quotes or brackets around it (quotes inside a name are its own)."""
    text = name.strip()
    for left, right in (('"', '"'), ("`", "`"), ("[", "]"), ("'", "'")):
        if len(text) >= 2 and text.startswith(left) and text.endswith(right):
            inner = text[1:-1]
            return inner.replace(left * 2, left) if left == right else inner
    return text


def explain_error(exc: QueryFailed, expression: exp.Expression, catalog: Catalog, source: str) -> SophrosyneError:
    """Turn an engine's unknown-name error into one that names the fix, from the catalog."""
    tables: dict[str, Table] = {}
    ctes = {c.alias_or_name.lower() for c in expression.find_all(exp.CTE)}
    for ref in expression.find_all(exp.Table):
        if not ref.name or ref.name.lower() in ctes:
            continue
        table = catalog.table(ref.name)
        if table is None:
            return UnknownTable(
                f"no table `{ref.name}` in {source}.",
                hint=did_you_mean(ref.name, catalog.table_names, "list_tables"),
            )
        tables[(ref.alias or ref.name).lower()] = table
    known = {c.lower() for t in tables.values() for c in t.column_names}
    aliases = {a.alias.lower() for a in expression.find_all(exp.Alias)}
    for col in expression.find_all(exp.Column):
        name = col.name.lower()
        if not name or name in known or name in aliases or isinstance(col.this, exp.Star):
            continue
        owner = tables.get(col.table.lower()) if col.table else None
        candidates = owner.column_names if owner else sorted({c for t in tables.values() for c in t.column_names})
        where = f"`{owner.name}`" if owner else "the tables of this query"
        if _names_missing(name, (exc.quoted or exc.message).lower()):
            return UnknownColumn(
                f"no column `{col.name}` in {where}.",
                hint=did_you_mean(col.name, candidates, "describe_table"),
            )
    return exc


# How the engines say a name is unknown (SQLite, DuckDB, PostgreSQL, MySQL/MariaDB).
_UNKNOWN_NAME = re.compile(
    r"no such column|unknown column|does not exist|not found|could not be found|does not have a column"
)


def _names_missing(name: str, message: str) -> bool:
    """Whether the engine's `message` says that column `name` is unknown (not merely holds its letters)."""
    return bool(_UNKNOWN_NAME.search(message)) and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", message) is not None


def did_you_mean(name: str, choices: list[str], fallback: str) -> str:
    """The names `name` likely means: a misspelling of one (most of its letters, in order: `employes`), a part of
    one (`reviews` for `performance_reviews`), or one with all its words; never one that merely shares a few
    letters (`nope` is not `performance_reviews`, which a partial score of 67 offered)."""
    from rapidfuzz import fuzz, process  # loaded on the first miss, not at start-up

    wanted = _words(name)
    close = process.extract(wanted, choices, scorer=fuzz.ratio, processor=_words, limit=3, score_cutoff=60)
    near = [str(choice) for choice, _, _ in close]
    if len(wanted) >= 3:
        words = set(wanted.split())
        near += sorted((c for c in choices if _contains(_words(c), wanted) or words <= set(_words(c).split())), key=len)
    best = list(dict.fromkeys(near))[:3]
    if best:
        return "Did you mean " + " or ".join(f"`{b}`" for b in best) + "?"
    return f"Call {fallback} to see what exists."


def _contains(one: str, other: str) -> bool:
    return other in one or (len(one) >= 3 and one in other)


def _words(name: str) -> str:
    """A name's words in lower case, one space apart: `Order_Details` and `order details` are one name."""
    return " ".join(re.split(r"[\W_]+", name.lower())).strip()
