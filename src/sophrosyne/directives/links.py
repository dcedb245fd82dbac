"""Linking tables: a table made of keys joining two kept tables is kept with them, though no word names it."""

from __future__ import annotations

from sophrosyne.base.memo import per_object
from sophrosyne.base.words import split_identifier
from sophrosyne.index.lexicon import Lexicon


def links(relevant: set[str], lexicon: Lexicon) -> set[str]:
    """Tables whose own key columns point at two kept tables (declared keys, or inferred ones where none are
    declared): a linking table (`writes` between `author` and `paper`) is needed whenever both ends are, though
    the question never names it."""
    linked = {
        t for t, ends in _references(lexicon).items() if t not in relevant and sum(e in relevant for e in ends) >= 2
    }
    if len(relevant) >= 2:
        # A linking table whose ends no join names (`directed_by`: id, msid, did) may join any two kept tables.
        linked |= _unresolved_links(lexicon) - relevant
    return linked


@per_object(limit=256)
def _references(lexicon: Lexicon) -> dict[str, tuple[str, ...]]:
    """Linking table -> the tables its key columns point at, over the joins directives use (`Lexicon.graph`).
    Kept as tuples of names, which the garbage collector stops tracking (a warehouse has thousands)."""
    found: dict[str, set[str]] = {}
    keys: dict[str, int] = {}
    for (table, _), ref in lexicon.join_columns.items():
        if ref in lexicon.graph.get(table, ()):
            found.setdefault(table, set()).add(ref)
            keys[table] = keys.get(table, 0) + 1
    # A linking table is mostly its keys (`writes`: paperId, authorId); a table of facts with keys among many
    # columns of its own (`superhero`) is about something the question would name.
    columns = _columns(lexicon)
    return {t: tuple(sorted(ends)) for t, ends in found.items() if 2 * keys[t] >= len(columns[t])}


_KEY_WORDS = frozenset({"id", "key", "code", "cd", "nbr", "num", "no", "sk", "fk"})


def key_like(column: str) -> bool:
    """A column named as a key: `author_id`, `DEPT_KEY`, `ST_CD`, `msid`."""
    words = split_identifier(column)
    return bool(words) and (words[-1] in _KEY_WORDS or (len(words) == 1 and words[0].endswith("id")))


@per_object(limit=256)
def _unresolved_links(lexicon: Lexicon) -> frozenset[str]:
    """Tables of at least two columns, all key-like, fewer than two of which a join resolves."""
    resolved = _references(lexicon)
    return frozenset(
        t
        for t, names in _columns(lexicon).items()
        if len(names) >= 2 and all(map(key_like, names)) and len(resolved.get(t, ())) < 2
    )


@per_object(limit=256)
def _columns(lexicon: Lexicon) -> dict[str, tuple[str, ...]]:
    """Table -> the names of its columns the caller sees."""
    found: dict[str, list[str]] = {}
    for table, column in lexicon.visible:
        found.setdefault(table, []).append(column)
    return {t: tuple(names) for t, names in found.items()}
