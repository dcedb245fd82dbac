"""Where the shared datasets are: one folder, each dataset in its own folder below it."""

from __future__ import annotations

import os
from pathlib import Path

from sophrosyne.errors import ConfigError


def datasets_root(project_root: Path | None = None) -> Path:
    """`$SOPHROSYNE_DATASETS`, else `../shared/datasets` beside the project root in a source checkout, else
    `datasets/` in the current folder (an installed package has no project root: its folder is the venv's)."""
    env = os.environ.get("SOPHROSYNE_DATASETS")
    if env:
        return Path(env)
    root = project_root or Path(__file__).resolve().parents[4]
    if project_root is None and not (root / "pyproject.toml").is_file():
        return Path.cwd() / "datasets"
    return root.parent / "shared" / "datasets"


def dataset_folder(root: Path, name: str, folder: str) -> Path:
    """The folder of a dataset, or an error that says where it was looked for and how to point elsewhere."""
    path = root / folder
    if not path.is_dir():
        raise ConfigError(
            f"no data for {name}: the folder {path} does not exist.",
            hint=f"Put the {name} files in {folder}/ under a datasets folder and set SOPHROSYNE_DATASETS to it "
            "(docs/bench.md says what each dataset holds and where it comes from); `bench directives` also takes "
            "--questions and --tables for your own files.",
        )
    return path
