"""Text cut, folded and compared the one way the whole package does it."""

from __future__ import annotations

from typing import Any

# A token is about four characters of English or SQL; close enough to budget a response.
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Tokens a response costs, estimated from its length (llm.count_tokens counts with a model's encoding)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def shorten(text: str, limit: int, *, at_word: bool = False) -> str:
    """`text` in at most `limit` characters, a cut marked with "…".

    With `at_word` the cut falls between words and drops a dangling quote or operator, so a quoted clause
    never ends mid-word. The one way text is cut anywhere in the package.
    """
    if len(text) <= limit:
        return text
    head = text[: max(0, limit - 1)]
    if at_word and " " in head:
        head = head.rsplit(" ", 1)[0].rstrip(" '\"=,;")
    return head + "…"


def one_line(text: str, limit: int = 120) -> str:
    """Whitespace folded to single spaces, then shortened: a description fit for one line."""
    return shorten(" ".join(text.split()), limit)


def normalize(value: Any) -> str:
    """A value as an exact match compares it: case and runs of spaces aside."""
    return " ".join(str(value).lower().split())


def counted(n: int, noun: str) -> str:
    """`n` and the noun, plural unless one: "1 row", "2,000 rows", "1 retry", "3 retries"."""
    if n == 1:
        return f"1 {noun}"
    plural = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
    return f"{n:,} {plural}"
