"""Tool arguments checked: counts capped with a note that says so, texts bounded, one plain sentence if wrong."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sophrosyne.base.text import shorten
from sophrosyne.errors import InvalidArgument

if TYPE_CHECKING:
    from pydantic import ValidationError

# The most values, rows and hits a call may ask for; more is capped with a note.
MAX_VALUES = 1000
MAX_FOUND_ROWS = 500
MAX_HITS = 100
# The longest text a search looks for (the longest statement read is sql/secure.py's MAX_SQL_CHARS).
MAX_TERM_CHARS = 1000


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


def argument_error(tool: str, error: ValidationError) -> InvalidArgument:
    """The first problem of a pydantic validation error as one sentence an agent can act on."""
    first = error.errors()[0]
    name = ".".join(str(p) for p in first["loc"]) or "arguments"
    kind, context = first["type"], first.get("ctx") or {}
    given = shorten(repr(first.get("input")), 40)
    if kind == "missing":
        message = f"{tool} needs `{name}`."
    elif kind in ("greater_than_equal", "greater_than"):
        message = f"`{name}` must be {context.get('ge', context.get('gt'))} or more, not {given}."
    elif kind in ("less_than_equal", "less_than"):
        message = f"`{name}` must be at most {context.get('le', context.get('lt'))}, not {given}."
    elif kind.startswith(("int_", "float_")):
        message = f"`{name}` must be a number, not {given}."
    elif kind.startswith("string_"):
        message = f"`{name}` must be text, not {given}."
    elif kind.startswith("list_"):
        message = f"`{name}` must be a list, not {given}."
    elif kind == "unexpected_keyword_argument":
        message = f"{tool} has no argument `{name}`."
    else:
        message = f"`{name}` is not valid: {first['msg'].lower()}."
    return InvalidArgument(message, hint="The tool's description lists its arguments and their types.")


def cut_for_directives(
    question: str | None, knowledge: str | None, question_chars: int, knowledge_chars: int
) -> tuple[str | None, str | None, str | None]:
    """A question and knowledge cut to the lengths directives read (their work grows with the text), and a
    note saying what was cut (None when nothing was)."""
    notes = []
    kept: list[str | None] = []
    for what, text, most in (("question", question, question_chars), ("knowledge", knowledge, knowledge_chars)):
        if text is not None and len(text) > most:
            notes.append(f"the {what} was cut to its first {most:,} of {len(text):,} characters for directives.")
            text = shorten(text, most, at_word=True)
        kept.append(text)
    joined = " ".join(notes)
    return kept[0], kept[1], (joined[:1].upper() + joined[1:]) or None
