"""Compile the package's bytecode before a start-up is timed, as an installed package has it.

`pip install` writes the bytecode of what it installs; an editable install's bytecode is written by its first
import, except where PYTHONDONTWRITEBYTECODE is set (this machine's environment sets it). Without it every
spawned server compiles each of its modules again, which added 0.2-0.3 s to each start measured here.

Example (what growth.py and peers.py call before they spawn a server):
    from bytecode import compile_package
    compile_package()
"""

from __future__ import annotations

import compileall
import importlib.util
from pathlib import Path


def compile_package(name: str = "sophrosyne") -> Path:
    """Write the missing or stale bytecode of the package `name` (quietly) and return its folder."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is not installed: run `pip install -e .` first.")
    folder = Path(next(iter(spec.submodule_search_locations)))
    compileall.compile_dir(folder, quiet=1)
    return folder
