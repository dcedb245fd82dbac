"""Issue 32, item 1: the question is read once. `score_tables` builds one `Question` and every signal takes it;
no other function of the directives re-reads the question's text with a tokenizer."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

import pytest

import sophrosyne.directives
from sophrosyne.directives import Question, compute_directives
from sophrosyne.index import SchemaIndex
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table

READERS = (
    "tokenize",
    "word_tokens",
    "words",
    "stemmed",
    "tokenize_words",
    "quoted_literals",
    "capitalised_phrases",
    "infer_identifiers",
    "question_numbers",
)
QUESTION = "Which customers in 'Lyon' ordered the Blue Widget in April 2022 with order_items.price over 30?"


def shop() -> Catalog:
    tables = [
        Table("customers", [Column("id", "INTEGER"), Column("name", "TEXT"), Column("city", "TEXT")], ["id"]),
        Table(
            "orders",
            [Column("id", "INTEGER"), Column("customer_id", "INTEGER"), Column("ordered_at", "TEXT")],
            ["id"],
            [ForeignKey(["customer_id"], "customers", ["id"])],
        ),
        Table("order_items", [Column("order_id", "INTEGER"), Column("product", "TEXT"), Column("price", "REAL")]),
        Table("suppliers", [Column("id", "INTEGER"), Column("country", "TEXT")], ["id"]),
    ]
    return Catalog(tables={t.name: t for t in tables})


def test_the_question_is_read_once_and_only_by_question(monkeypatch: pytest.MonkeyPatch) -> None:
    readers: list[str] = []

    def watched(name: str, module: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def reader(*args: Any, **kwargs: Any) -> Any:
            if args and args[0] == QUESTION:
                readers.append(f"{module}.{name}")
            return real(*args, **kwargs)

        return reader

    for info in pkgutil.iter_modules(sophrosyne.directives.__path__):
        module = importlib.import_module(f"sophrosyne.directives.{info.name}")
        for name in READERS:
            real = getattr(module, name, None)
            if callable(real):
                monkeypatch.setattr(module, name, watched(name, info.name, real))
    reads: list[str] = []
    real_read = Question.read.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(Question, "read", classmethod(lambda cls, text: reads.append(text) or real_read(cls, text)))
    catalog = shop()
    compute_directives(QUESTION, "", catalog, SchemaIndex.build(catalog))
    assert reads.count(QUESTION) == 1
    assert readers and {r.split(".")[0] for r in readers} == {"question"}, readers
