"""The classic text-to-SQL sets: schemas from their csv (primary keys, no foreign keys), variables filled in the
question and the SQL, every sentence once, gold tables from the SQL, values where a database ships."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from fixtures.datasets import shared_datasets
from sophrosyne.bench.data.registry import DATASETS, load_dataset
from sophrosyne.bench.data.text2sql_classic import FOLDER, SETS, fill, load_text2sql_classic, read_schema
from sophrosyne.errors import ConfigError

SCHEMA = """Table Name, Field Name, Is Primary Key, Is Foreign Key, Type, Other info
RESTAURANT, ID,            y, n, int(11), NOT NULL AUTO_INCREMENT,
RESTAURANT, RATING,        n, n, "decimal(1,1)"
RESTAURANT, CITY_NAME,     n, y, varchar(255)
-, -, -, -, -
LOCATION, RESTAURANT_ID, Y, y, INT(11) NOT NULL
LOCATION, CITY_NAME, -, -, VARCHAR(50) DEFAULT NULL
"""


def test_the_schema_csv_gives_tables_types_and_primary_keys_but_no_foreign_keys(tmp_path: Path) -> None:
    path = tmp_path / "restaurants-schema.csv"
    path.write_text(SCHEMA)
    catalog = read_schema(path)
    assert list(catalog.tables) == ["RESTAURANT", "LOCATION"]
    restaurant, location = catalog.tables["RESTAURANT"], catalog.tables["LOCATION"]
    assert [(c.name, c.type, c.nullable) for c in restaurant.columns] == [
        ("ID", "INT(11)", False),
        ("RATING", "DECIMAL(1,1)", True),
        ("CITY_NAME", "VARCHAR(255)", True),
    ]
    assert restaurant.primary_key == ["ID"] and location.primary_key == ["RESTAURANT_ID"]
    assert location.columns[1].type == "VARCHAR(50)" and not location.columns[1].primary_key
    # The foreign-key flag names no referenced table: nothing is declared.
    assert not restaurant.foreign_keys and not location.foreign_keys


def test_variables_are_filled_as_whole_words_once_and_quoted_in_sql() -> None:
    values = {"name0": "buttercup kitchen", "city_name0": "name0 city", "q0": 'say "hi"'}
    assert fill("how many name0 are there in city_name0 ?", values) == (
        "how many buttercup kitchen are there in name0 city ?"
    )
    assert fill('WHERE A.NAME = "q0" AND B.X = number0', values, quoted=True) == (
        'WHERE A.NAME = "say \\"hi\\"" AND B.X = number0'
    )


@pytest.mark.slow  # parses 2,233 gold queries: about a second
def test_every_set_reads_with_every_gold_query_parsed_and_values_for_two_sets() -> None:
    root = shared_datasets("text2sql_classic")
    dataset = load_dataset("text2sql-classic")
    counts = Counter(q.db_id for q in dataset.questions)
    assert counts == {
        "geography": 877,
        "scholar": 777,
        "academic": 195,
        "imdb": 130,
        "yelp": 128,
        "restaurants": 125,
    }
    # imdb's entry 27 asks for a producer, but its first SQL filters on a company variable nothing fills.
    assert [(s["id"], s["error"]) for s in dataset.skipped] == [
        ("imdb-27-0", "gold SQL holds a variable the question does not fill: company_name0")
    ]
    assert set(dataset.gold) == {q.id for q in dataset.questions}
    assert set(dataset.database_files) == {"geography", "restaurants"}
    assert dataset.tuning_databases is None
    assert not any(fk for c in dataset.catalogs.values() for t in c.tables.values() for fk in t.foreign_keys)
    names = {
        v["name"] for s in SETS for e in json.loads((root / FOLDER / f"{s}.json").read_text()) for v in e["variables"]
    }
    placeholder = re.compile(r"\b(" + "|".join(sorted(names)) + r")\b")
    assert not [q.id for q in dataset.questions if placeholder.search(q.question) or placeholder.search(q.sql)]
    first = dataset.questions[0]
    assert first.question == "return me the homepage of PVLDB ."
    assert '"PVLDB"' in first.sql and dataset.gold[first.id] == {"journal"}


def test_one_set_by_name_with_its_values_and_every_sentence_once(tmp_path: Path) -> None:
    shared_datasets("text2sql_classic")
    assert "text2sql-classic-restaurants" in DATASETS
    restaurants = load_dataset("text2sql-classic-restaurants")
    assert set(restaurants.catalogs) == {"restaurants"} and not restaurants.skipped
    assert set(restaurants.database_files) == {"restaurants"}
    # 378 sentences, of which 125 distinct once their variables are filled in.
    assert len(restaurants.questions) == 125 and set(restaurants.gold) == {q.id for q in restaurants.questions}
    pairs = [(q.question, q.sql) for q in restaurants.questions]
    assert len(pairs) == len(set(pairs))
    first = restaurants.questions[0]
    assert first.question == "how many buttercup kitchen are there in san francisco ?"
    assert 'CITY_NAME = "san francisco"' in first.sql and 'NAME = "buttercup kitchen"' in first.sql
    assert restaurants.gold[first.id] == {"LOCATION", "RESTAURANT"}
    assert restaurants.catalogs["restaurants"].tables["RESTAURANT"].primary_key == ["ID"]
    with pytest.raises(ConfigError, match="unknown classic set"):
        load_text2sql_classic(tmp_path, "text2sql-classic-atis")
