"""Where a key or a value is written in a TOML file: the line an error about a configuration file names."""

from __future__ import annotations

import json
import re
from pathlib import Path

# One key of a dotted key or a table header: bare, "basic" or 'literal', then a dot or the end.
_KEY = re.compile(r"""\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*(\.)?""")


def _keys(text: str) -> tuple[tuple[str, ...], int]:
    """The keys of a dotted key at the start of `text`, and where they end."""
    keys: list[str] = []
    at = 0
    while True:
        match = _KEY.match(text, at)
        if match is None:
            break
        basic, literal, bare, dot = match.groups()
        keys.append(json.loads(f'"{basic}"') if basic is not None else literal if literal is not None else bare)
        at = match.end()
        if not dot:
            break
    return tuple(keys), at


class TomlLines:
    """The line of each key of a TOML file, and the lines its value spans (a list may span several).

    It reads what `tomllib` does not keep: positions. Headers (`[a.b]`, `[[a]]`) and `key = value` lines are
    recognised; what it cannot place (an inline table's inner keys) is found at the nearest enclosing key.
    """

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()
        self._at: dict[tuple[str, ...], tuple[int, int]] = {}  # key -> (first line, last line), 1-based
        header: tuple[str, ...] = ()
        open_key: tuple[str, ...] | None = None
        for number, line in enumerate(self.lines, 1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            if stripped.startswith("["):
                inner = stripped.lstrip("[")
                keys, end = _keys(inner)
                if keys and inner[end:].lstrip().startswith("]"):
                    header, open_key = keys, None
                    self._at.setdefault(header, (number, number))
                    continue
            keys, end = _keys(stripped)
            if keys and stripped[end:].lstrip().startswith("="):
                open_key = header + keys
                self._at.setdefault(open_key, (number, number))
            elif open_key is not None:  # a value continued on this line (a list over several lines)
                first, _ = self._at[open_key]
                self._at[open_key] = (first, number)

    @classmethod
    def read(cls, path: Path) -> TomlLines:
        return cls(path, Path(path).read_text(encoding="utf-8"))

    def line(self, *keys: str, value: str | None = None) -> int | None:
        """The line of `keys` (the longest written prefix of them); with `value`, the line of that string in
        the key's value, when it is written there."""
        for end in range(len(keys), 0, -1):
            span = self._at.get(tuple(keys[:end]))
            if span is None:
                continue
            if value is not None and end == len(keys):
                quoted = (json.dumps(value, ensure_ascii=False), f"'{value}'")
                for number in range(span[0], span[1] + 1):
                    if any(q in self.lines[number - 1] for q in quoted):
                        return number
            return span[0]
        return None

    def where(self, *keys: str, value: str | None = None) -> str:
        """`file:line` of `keys` (or of `value` in it), or the file alone when the line is not known."""
        number = self.line(*keys, value=value)
        return f"{self.path}:{number}" if number is not None else str(self.path)
