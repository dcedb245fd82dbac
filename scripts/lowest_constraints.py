"""Print pip constraints pinning each runtime dependency of pyproject.toml to its lower bound, which CI tests."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PROJECT = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
LOWER = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*>=\s*([^,;\s]+)")


def main() -> None:
    extras = PROJECT["optional-dependencies"]
    requirements = [*PROJECT["dependencies"], *extras["bench"], *extras["spark"]]
    for requirement in requirements:
        match = LOWER.match(requirement)
        if match is None:
            raise SystemExit(f"{requirement!r} has no lower bound: give it one (name>=version,<next).")
        print(f"{match.group(1)}=={match.group(2)}")


if __name__ == "__main__":
    main()
