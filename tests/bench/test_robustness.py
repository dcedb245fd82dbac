"""`bench robustness`: every perturbation of every set in one table (safe / prune), n/a where one has no
meaning, the classic sets one row each, the same figures as JSON."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from sophrosyne.bench.cli.app import bench_app
from sophrosyne.bench.data.text2sql_classic import SETS

SCHEMA = """Table Name, Field Name, Is Primary Key, Is Foreign Key, Type
CITY, CITY_NAME, y, n, varchar(255)
CITY, STATE_NAME, n, y, varchar(255)
-, -, -, -, -
STATE, STATE_NAME, y, n, varchar(255)
STATE, POPULATION, n, n, int(11)
-, -, -, -, -
RIVER, RIVER_NAME, y, n, varchar(255)
"""
ENTRIES = [
    {
        "sentences": [{"text": "what is the population of state_name0", "variables": {"state_name0": "texas"}}],
        "sql": ['SELECT STATEalias0.POPULATION FROM STATE AS STATEalias0 WHERE STATEalias0.STATE_NAME = "state_name0"'],
        "variables": [{"example": "texas", "location": "both", "name": "state_name0", "type": "state_name"}],
    },
    {
        "sentences": [{"text": "which cities are in state_name0", "variables": {"state_name0": "ohio"}}],
        "sql": ['SELECT CITYalias0.CITY_NAME FROM CITY AS CITYalias0 WHERE CITYalias0.STATE_NAME = "state_name0" ;'],
        "variables": [{"example": "ohio", "location": "both", "name": "state_name0", "type": "state_name"}],
    },
]  # fmt: skip


def test_robustness_prints_one_table_of_every_perturbation_per_classic_set(tmp_path: Path) -> None:
    folder = tmp_path / "datasets" / "text2sql_classic"
    folder.mkdir(parents=True)
    for name in SETS:
        (folder / f"{name}-schema.csv").write_text(SCHEMA)
        (folder / f"{name}.json").write_text(json.dumps(ENTRIES))
    with sqlite3.connect(folder / "geography-db.added-in-2020.sqlite") as db:
        db.execute("CREATE TABLE state (state_name TEXT, population INT)")
        db.execute("INSERT INTO state VALUES ('texas', 1), ('ohio', 2)")
    db.close()
    out = tmp_path / "robustness.json"
    command = ["robustness", "--dataset", "text2sql-classic", "--perturb", "none"]
    result = CliRunner().invoke(
        bench_app,
        [*command, "--perturb", "synonyms", "--json", str(out), "--quiet"],
        env={"COLUMNS": "200", "SOPHROSYNE_DATASETS": str(tmp_path / "datasets")},
    )
    assert result.exit_code == 0, result.output
    assert "safe rate / prune rate" in result.output and "text2sql-classic-yelp" in result.output
    data = json.loads(out.read_text())
    assert data["perturbations"] == ["none", "synonyms"]
    assert data["rows"] == [*(f"text2sql-classic-{s}" for s in SETS), "text2sql-classic"]
    for row in data["rows"]:
        cells = data["cells"][row]
        assert "Spider-Syn rewords only" in cells["synonyms"]["n/a"]
        none = cells["none"]
        assert none["part"] == "all" and none["questions"] == (12 if row == "text2sql-classic" else 2)
        assert 0.0 <= none["safe_rate"] <= 1.0 and 0.0 <= none["prune_rate"] <= 1.0
    assert data["settings"]["split"] == "all" and "perturbation" not in data["settings"]
