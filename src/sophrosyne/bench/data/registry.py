"""Every shared dataset by name: the sets directives are measured on, and the sets answers are scored on."""

from __future__ import annotations

from pathlib import Path

from sophrosyne.bench.data.bird import MINI_DEV, bird_dev_suite, load_bird_dev, mini_dev_suite
from sophrosyne.bench.data.folders import dataset_folder, datasets_root
from sophrosyne.bench.data.spider import load_spider_dev, spider_dev_suite
from sophrosyne.bench.data.spider_syn import WORDINGS, load_spider_syn
from sophrosyne.bench.data.text2sql_classic import dataset_names as classic_names
from sophrosyne.bench.data.text2sql_classic import load_text2sql_classic
from sophrosyne.bench.data.types import Dataset, Suite
from sophrosyne.errors import ConfigError

DATASETS = ("bird-dev", "spider-dev", "spider2-cloud", "spider-syn", "spider-syn-original", *classic_names())
SUITES = (
    "bird-dev",
    "bird-mini-dev",
    "bird-mini-dev-mysql",
    "bird-mini-dev-postgresql",
    "spider-dev",
    "spider2-lite",
)


def load_dataset(name: str, root: Path | None = None) -> Dataset:
    """`bird-dev`, `spider-dev`, `spider2-cloud`, `spider-syn`, `spider-syn-original`, `text2sql-classic` (every
    classic set) or `text2sql-classic-<set>` from the shared datasets folder."""
    root = root or datasets_root()
    if name == "bird-dev":
        return load_bird_dev(root)
    if name == "spider-dev":
        return load_spider_dev(root)
    if name == "spider2-cloud":
        from sophrosyne.bench.data.spider2 import load_spider2_cloud  # its gold tables need sqlglot

        return load_spider2_cloud(root)
    if name in WORDINGS:
        return load_spider_syn(root, name)
    if name in classic_names():
        return load_text2sql_classic(root, name)
    raise ConfigError(f"unknown dataset {name!r}.", hint=f"Use one of {', '.join(DATASETS)}.")


def load_suite(name: str, *, root: Path | None = None, db_url: str | None = None) -> Suite:
    """A shared dataset by name; `db_url` (with `{db_id}` where each database's name goes, or one database
    holding every table, as mini-dev sets up MySQL and PostgreSQL) serves the server-dialect gold."""
    root = root or datasets_root()
    if name == "bird-dev":
        return bird_dev_suite(root, db_url)
    if name in MINI_DEV:
        return mini_dev_suite(name, root, db_url)
    if name == "spider-dev":
        return spider_dev_suite(root, db_url)
    if name == "spider2-lite":
        from sophrosyne.bench.data.spider2_lite import load_spider2_lite

        return load_spider2_lite(dataset_folder(root, name, "spider2_lite"))
    raise ConfigError(f"unknown dataset {name!r}.", hint=f"Use one of {', '.join(SUITES)}.")
