"""`sophrosyne index DB`: build (or reuse) the offline schema and value index of a database."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from sophrosyne.catalog import load_bird_descriptions
from sophrosyne.index.embedders import default_embedder
from sophrosyne.index.schema_index import index_folder, load_or_build
from sophrosyne.index.values import ValueBudget, load_or_build_values, values_path
from sophrosyne.settings import Settings
from sophrosyne.terminal import console, progress_bar, reported


def index_command(
    db: Annotated[str, typer.Argument(help="Database: a .sqlite/.db/.duckdb path or a SQLAlchemy URL.")],
    descriptions: Annotated[
        Path | None, typer.Option(help="Folder of BIRD-style <table>.csv column descriptions.")
    ] = None,
    config: Annotated[Path | None, typer.Option("--config", help="TOML settings file.", show_default=False)] = None,
    values: Annotated[bool, typer.Option(help="Also index distinct text values, for literal grounding.")] = True,
    value_seconds: Annotated[float, typer.Option(help="Time budget of the value index, seconds.", min=0.1)] = 20.0,
    rebuild: Annotated[bool, typer.Option(help="Rebuild even when a cached index matches the schema.")] = False,
) -> None:
    """Build the offline index (BM25 + embeddings over columns, distinct values) in the cache folder.

    The index is keyed by a hash of the schema and descriptions: it is reused while they are unchanged.

    Example: sophrosyne index ../shared/datasets/bird_dev/dev_databases/superhero/superhero.sqlite
    --descriptions ../shared/datasets/bird_dev/dev_databases/superhero/database_description
    """
    from sophrosyne.connection import open_database

    with reported():
        settings = Settings.load(config)
        database = open_database(db, settings)
        catalog = database.catalog()
        if descriptions is not None:
            load_bird_descriptions(catalog, descriptions)
        embedder = default_embedder()
        folder = index_folder(settings.cache_dir, catalog, embedder)
        if rebuild and folder.exists():
            import shutil

            shutil.rmtree(folder)
            values_path(settings.cache_dir, catalog).unlink(missing_ok=True)
        started = time.perf_counter()
        with progress_bar() as tick:
            index = load_or_build(catalog, settings.cache_dir, embedder=embedder, progress=tick)
            value_count = 0
            if values:
                tick("values", 0, 1)
                value_index = load_or_build_values(
                    catalog, settings.cache_dir, database, ValueBudget(seconds=value_seconds)
                )
                value_count = len(value_index)
                tick("values", 1, 1)
        elapsed = time.perf_counter() - started
        console.print(
            f"indexed {len(index.docs)} columns of {len(index.tables)} tables"
            + (f" and {value_count} distinct values" if values else "")
            + f" in {elapsed:.2f} s -> {escape(str(folder))}"
        )
