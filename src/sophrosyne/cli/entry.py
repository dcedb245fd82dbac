"""The `sophrosyne` console script: `--version` is answered before the command line loads (typer, rich and the
commands take 0.1-0.4 s to import, Python itself 0.02 s)."""

from __future__ import annotations

import sys

import sophrosyne.base.parent  # noqa: F401  (reads the parent's pid now, before anything else runs)


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from sophrosyne.base.version import __version__

        print(f"sophrosyne {__version__}")
        return
    from sophrosyne.cli.app import app

    app()
