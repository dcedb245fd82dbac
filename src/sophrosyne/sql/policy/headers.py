"""Column names as the statement wrote them, on engines that name a computed column by their own rendering.

DuckDB names an unaliased computed column by its rendering of the expression, `(SELECT count_star() FROM
_sec_t AS t)` once a role's rewrite has renamed `t`. The rendering is the engine's, so it cannot be given
beforehand as an alias (as the rewrite's `_headers` does where the name is the SQL text): the rewrite notes
each reference it renamed, and the header is mended as it comes back.
"""

from __future__ import annotations

import re

from sqlglot import exp

# The key of a rewritten tree's meta that maps a renamed reference to the name written.
RENAMED = "sophrosyne_renamed"
# A name DuckDB writes without quotes in a column's header.
_PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def note_renamed(renamed: dict[str, str], fresh: str, alias: str, written: str) -> None:
    """`FROM t` became `FROM <fresh> AS t`: both as the engine writes them in a header."""
    renamed[f"{_rendered(fresh)} AS {_rendered(alias)}"] = ".".join(_rendered(p) for p in written.split("."))


def shown_columns(tree: exp.Expr, columns: list[str]) -> list[str]:
    """The result's column names with each reference the rewrite renamed written back as the statement wrote
    it. Longer names first, so that `_sec_t AS t` becomes `t` before `_sec_t` alone becomes the table's name."""
    renamed: dict[str, str] = tree.meta.get(RENAMED) or {}
    if not renamed or not any(fresh in column for column in columns for fresh in renamed):
        return columns
    order = sorted(renamed, key=len, reverse=True)
    pattern = re.compile("|".join(rf"(?<![\w\"]){re.escape(name)}(?![\w\"])" for name in order))
    return [pattern.sub(lambda m: renamed[m.group(0)], column) for column in columns]


def _rendered(name: str) -> str:
    """A name as DuckDB writes it in a header: as it is when plain, else in double quotes."""
    return name if _PLAIN_NAME.fullmatch(name) else '"' + name.replace('"', '""') + '"'
