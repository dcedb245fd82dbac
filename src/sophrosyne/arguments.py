"""Tool arguments checked: counts capped with a note that says so, texts bounded, one plain sentence if wrong."""

from __future__ import annotations

from sophrosyne.errors import InvalidArgument

# The most values, rows and hits a call may ask for; more is capped with a note.
MAX_VALUES = 1000
MAX_FOUND_ROWS = 500
MAX_HITS = 100
# The longest text a search looks for, and the longest statement read.
MAX_TERM_CHARS = 1000
MAX_SQL_CHARS = 100_000


def count(value: int | None, name: str, default: int, most: int, setting: str | None = None) -> tuple[int, str | None]:
    """A count argument (limit, k): the default when absent, at most `most` (with a note saying so when it
    was asked for more); below 1 is the caller's error."""
    if value is None:
        return min(default, most), None
    if value < 1:
        raise InvalidArgument(
            f"`{name}` must be 1 or more, not {value}.", hint=f"Leave it out for the default, {default}."
        )
    if value > most:
        why = f" (the server's {setting})" if setting else ""
        return most, f"`{name}` {value:,} was capped to {most:,}{why}."
    return value, None


def not_too_long(text: str, name: str) -> None:
    """A value to search for is a value, not a document: engines refuse patterns past a few kilobytes."""
    if len(text) > MAX_TERM_CHARS:
        raise InvalidArgument(
            f"`{name}` is {len(text):,} characters long; a search takes at most {MAX_TERM_CHARS:,}.",
            hint="Search for a distinctive part of the value.",
        )
