"""Reading a source's option tables (`tls`, `ssh`) from a sources file: what they share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sophrosyne.errors import ConfigError


def option_table(entry: Any, where: str, keys: set[str], example: str) -> dict[str, Any]:
    """`entry` checked as a table of `keys` only (`where` names it in errors; `example` shows one)."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table.", hint=f"Write {example}.")
    unknown = set(entry) - keys
    if unknown:
        raise ConfigError(f"{where} has unknown key `{sorted(unknown)[0]}`.", hint=f"Keys: {', '.join(sorted(keys))}.")
    return entry


def option_files(entry: dict[str, Any], where: str, folder: Path, names: tuple[str, ...]) -> dict[str, Path | None]:
    """The files `names` of a table, relative to `folder`; each one given must exist."""
    files: dict[str, Path | None] = {}
    for key in names:
        given = entry.get(key)
        path = None if given is None else folder / Path(given).expanduser()
        if path is not None and not path.is_file():
            raise ConfigError(f"{where}.{key}: {path} is not a file.", hint="Give the file's path.")
        files[key] = path
    return files
