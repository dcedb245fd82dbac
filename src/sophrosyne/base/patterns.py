"""Patterns that agents and databases give, matched in linear time by RE2: SQLite's REGEXP and name globs.

Python's `re` backtracks: `(a+)+$` on 'aaaa…b' doubles its time with each character and holds the GIL all
along, so one call would freeze every other. RE2 matches in time linear in the text and refuses what it
cannot bound (backreferences, lookaround) when the pattern is compiled.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

# RE2 compiles a pattern into a program of at most this many bytes (its own default is 8 MB): compiling
# stays quick, and a pattern past it is refused as too large.
_MAX_PROGRAM_BYTES = 8 << 20


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message says why, in RE2's words."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 writes each refused pattern to stderr otherwise
    options.max_mem = _MAX_PROGRAM_BYTES
    return options


_OPTIONS = _options()


@lru_cache(maxsize=256)
def regex(pattern: str) -> Any:
    """The compiled pattern (cached: SQLite calls REGEXP once per row with the same pattern)."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(f"{pattern[:80]!r} is not a pattern RE2 can run: {reason}") from None


def glob_regex(glob: str) -> str:
    """A shell glob (`*`, `?`, `[abc]`, `[!abc]`) as an anchored RE2 pattern, in one pass over the glob.

    (fnmatch.translate takes time quadratic in the number of `[` of the glob.)"""
    out: list[str] = []
    i, n = 0, len(glob)
    closes = True  # whether a later `]` may still close a set: once none does, no `[` is searched again
    while i < n:
        ch = glob[i]
        i += 1
        if ch == "*":
            if not out or out[-1] != ".*":  # `**` matches what `*` does
                out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[" and closes:
            start = i + 1 if i < n and glob[i] == "!" else i
            start += 1 if start < n and glob[start] == "]" else 0  # a `]` first in the set is a member
            end = glob.find("]", start)
            if end < 0:
                closes = False
                out.append(re2.escape(ch))  # an unclosed `[` is itself
                continue
            body, i = glob[i:end], end + 1
            negate = body.startswith("!")
            members = "".join("\\" + c if c in "\\^[]" else c for c in (body[1:] if negate else body))
            out.append(f"[{'^' if negate else ''}{members}]")
        else:
            out.append(re2.escape(ch))
    return "(?s)^" + "".join(out) + "$"


@lru_cache(maxsize=256)
def glob(pattern: str) -> Any:
    """A compiled glob that matches whole names."""
    return regex(glob_regex(pattern))
