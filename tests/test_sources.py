"""Several sources in one server: the sources file, routing by `source`, roles per source, source directives;
two sources (SQLite and PostgreSQL) served by one process over stdio and streamable HTTP."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult, TextContent

from fixtures.engines import PG_DSN, build_sqlite, unique_name, unreachable
from fixtures.serving import free_port, in_process, wait_until_ready
from sophrosyne.errors import ConfigError, UnknownSource
from sophrosyne.sources import Sources, load_sources
from sophrosyne.sql.policy import hash_token

ROOT = Path(__file__).resolve().parents[1]
TOKENS = {"both": "both-token-19c2e7", "admin": "admin-token-8d01aa", "shop_only": "shop-token-55f0b3"}
HR_POLICY = f"""
default_role = "ops"
[roles.admin]
[roles.ops]
deny = ["notes"]
[roles.ops.tables.departments]
row_filter = "dept_code = 'D042'"
[tokens]
"{hash_token(TOKENS["both"])}" = "ops"
"{hash_token(TOKENS["admin"])}" = "admin"
"""
SHOP_POLICY = f"""
default_role = "lyon"
[roles.admin]
[roles.lyon]
[roles.lyon.tables.customers]
row_filter = "city = 'Lyon'"
[roles.lyon.tables.orders]
row_filter = "customer_id IN (SELECT c.customer_id FROM customers AS c WHERE c.city = 'Lyon')"
[tokens]
"{hash_token(TOKENS["both"])}" = "lyon"
"{hash_token(TOKENS["admin"])}" = "admin"
"{hash_token(TOKENS["shop_only"])}" = "lyon"
"""
SHOP = [
    "CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, customer_name TEXT NOT NULL, city TEXT NOT NULL)",
    "CREATE TABLE products (product_id INTEGER PRIMARY KEY, product_title TEXT NOT NULL, unit_price NUMERIC(8, 2))",
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers, "
    "product_id INTEGER REFERENCES products, quantity INTEGER, ordered_on DATE)",
    "INSERT INTO customers VALUES (1, 'Camille', 'Lyon'), (2, 'Noah', 'Paris'), (3, 'Lea', 'Lyon'), "
    "(4, 'Hugo', 'Nantes')",
    "INSERT INTO products VALUES (1, 'Kettle', 30), (2, 'Teapot', 25), (3, 'Mug', 8)",
    "INSERT INTO orders SELECT g, 1 + g % 4, 1 + g % 3, 1 + g % 5, DATE '2025-01-01' + g FROM generate_series(1, 40) g",
]


@pytest.fixture(scope="module")
def shop_url() -> Iterator[str]:
    """A PostgreSQL schema of customers, products and orders; a URL whose search_path is that schema."""
    import psycopg

    try:
        conn = psycopg.connect(PG_DSN, autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        unreachable("PostgreSQL", str(exc).strip().splitlines()[0])
    schema = unique_name("soph_sources")
    with conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            conn.execute(f'SET search_path TO "{schema}"')
            for statement in SHOP:
                conn.execute(statement)
            conn.execute("ANALYZE")
            yield f"{PG_DSN}?options=-csearch_path%3D{schema}"
        finally:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(scope="module")
def sources_file(tmp_path_factory: pytest.TempPathFactory, shop_url: str) -> Path:
    folder = tmp_path_factory.mktemp("sources")
    build_sqlite(folder / "hr.sqlite")
    (folder / "hr_policy.toml").write_text(HR_POLICY)
    (folder / "shop_policy.toml").write_text(SHOP_POLICY)
    # The password variable shows the form secrets take; the test server needs none, so it is empty.
    user, rest = shop_url.split("@", 1)
    path = folder / "sources.toml"
    path.write_text(
        f"""
[sources.hr]
path = "hr.sqlite"
description = "People: employees, departments and absences."
policy = "hr_policy.toml"
role = "ops"

[sources.shop]
url = "{user}:${{SOPH_TEST_SHOP_PASSWORD}}@{rest}"
description = "Sales: customers, products and orders."
policy = "shop_policy.toml"
role = "lyon"
"""
    )
    return path


@pytest.fixture(autouse=True)
def shop_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOPH_TEST_SHOP_PASSWORD", "")


# -- the sources file ---------------------------------------------------------------------------------------


def test_sources_file_paths_are_relative_to_it_and_secrets_come_from_variables(sources_file: Path) -> None:
    hr, shop = load_sources(sources_file)
    assert (hr.name, hr.target, hr.role) == ("hr", str(sources_file.parent / "hr.sqlite"), "ops")
    assert hr.policy == sources_file.parent / "hr_policy.toml"
    assert shop.target.startswith("postgresql://postgres:@127.0.0.1")
    assert shop.description == "Sales: customers, products and orders."


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[sources.a]\nurl = "postgresql://u:secret@h/db"', "holds a password"),
        ('[sources.a]\nurl = "postgresql://u:${SOPH_TEST_UNSET_VARIABLE}@h/db"', "SOPH_TEST_UNSET_VARIABLE"),
        ('[sources.a]\npath = "a.db"\nurl = "postgresql://h/db"', "exactly one of"),
        ('[sources.a]\npath = "a.db"\nowner = "me"', "unknown key `owner`"),
        ('[sources."a b"]\npath = "a.db"', "a source name"),
        ("title = 'x'", "one [sources.NAME] table"),
    ],
)
def test_sources_file_errors_name_the_key(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "sources.toml"
    path.write_text(body)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("$", r"\$")):
        load_sources(path)


# -- routing in the Python API -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def opened(sources_file: Path) -> Iterator[Sources]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOPH_TEST_SHOP_PASSWORD", "")
        sources = Sources.open(load_sources(sources_file))
    yield sources
    sources.close()


def test_a_source_must_be_named_when_there_are_several(opened: Sources) -> None:
    with pytest.raises(UnknownSource, match="there are 2 sources"):
        opened.get(None)
    with pytest.raises(UnknownSource, match="The sources are hr, shop"):
        opened.get("warehouse")
    assert opened.get("SHOP").dialect == "postgres"


def test_each_source_applies_its_own_policy(opened: Sources) -> None:
    hr, shop = opened.get("hr"), opened.get("shop")
    assert "notes" not in hr.catalog.tables
    assert hr.execute_sql("SELECT dept_code FROM departments").rows == [["D042"]]
    cities = shop.execute_sql("SELECT DISTINCT city FROM customers").rows
    assert cities == [["Lyon"]]


def test_source_directives_name_the_source_a_question_does_not_need(opened: Sources) -> None:
    views = dict(opened.environments)
    # "bought", not "ordered": hr has a table `Order Details`, and "ordered" is of its family (its Snowball stem).
    listed = opened.list_sources(views, question="Which customers bought the most teapots?")
    relevance = {s.name: s.relevance for s in listed.sources}
    assert relevance["hr"] is not None and relevance["hr"].likely_irrelevant
    assert relevance["shop"] is not None and not relevance["shop"].likely_irrelevant
    assert relevance["shop"].best_table in {"orders", "products", "customers"}
    other = opened.list_sources(views, question="How many employees were absent in October?")
    assert {s.name: s.relevance.likely_irrelevant for s in other.sources if s.relevance} == {
        "hr": False,
        "shop": True,
    }


# -- one process, two sources, over stdio and HTTP -----------------------------------------------------------


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def calls(client: Client, requests: list[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
    return [await client.call_tool(name, arguments) for name, arguments in requests]


ROLE_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_sources", {}),
    ("list_tables", {}),
    ("list_tables", {"source": "hr"}),
    ("execute_sql", {"sql": "SELECT dept_code FROM departments ORDER BY dept_code", "source": "hr"}),
    ("execute_sql", {"sql": "SELECT DISTINCT city FROM customers ORDER BY city", "source": "shop"}),
    ("get_distinct_values", {"table": "customers", "column": "city", "source": "shop"}),
]


def check_restricted(results: list[CallToolResult]) -> None:
    listed, unnamed, hr_tables, departments, cities, values = results
    assert "hr (sqlite" in text_of(listed) and "shop (postgres" in text_of(listed)
    assert "Sales: customers, products and orders." in text_of(listed)
    assert unnamed.is_error and "name one with `source`" in text_of(unnamed)
    assert "employees" in text_of(hr_tables) and "notes" not in text_of(hr_tables)
    assert (departments.structured_content or {})["rows"] == [["D042"]]
    assert (cities.structured_content or {})["rows"] == [["Lyon"]]
    assert "Lyon: 2" in text_of(values) and "Paris" not in text_of(values)


def test_two_sources_with_the_roles_of_the_sources_file(sources_file: Path) -> None:
    # The server `serve --sources` builds, in-process; http_sources below serves the same file from a process.
    settings = {
        "SOPH_TEST_SHOP_PASSWORD": "",
        "SOPHROSYNE_CACHE_DIR": str(sources_file.parent / "cache"),
        "SOPHROSYNE_DIRECTIVES": "none",
    }
    with in_process(None, sources=sources_file, env=settings) as session:
        check_restricted(session.portal.call(calls, session.client, ROLE_CALLS))


@pytest.fixture(scope="module")
def http_sources(sources_file: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "sophrosyne", "serve", "--sources", str(sources_file), "--http", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**_environ(), "SOPH_TEST_SHOP_PASSWORD": "", "SOPHROSYNE_DIRECTIVES": "none"},
    )
    try:
        yield wait_until_ready(process, port)
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stderr:
            process.stderr.close()


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


@contextlib.asynccontextmanager
async def http_client(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def over_http(url: str, token: str, requests: list[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
    async def run() -> list[CallToolResult]:
        async with http_client(url, token) as client:
            return await calls(client, requests)

    return anyio.run(run)


def test_two_sources_over_http_a_token_names_a_role_per_source(http_sources: str) -> None:
    check_restricted(over_http(http_sources, TOKENS["both"], ROLE_CALLS))
    admin = over_http(http_sources, TOKENS["admin"], ROLE_CALLS)
    assert len((admin[3].structured_content or {})["rows"]) == 5
    assert (admin[4].structured_content or {})["rows"] == [["Lyon"], ["Nantes"], ["Paris"]]


def test_a_token_of_one_source_opens_nothing_of_the_other(http_sources: str) -> None:
    listed, hr, shop = over_http(
        http_sources,
        TOKENS["shop_only"],
        [
            ("list_sources", {}),
            ("list_tables", {"source": "hr"}),
            ("execute_sql", {"sql": "SELECT COUNT(*) FROM customers", "source": "shop"}),
        ],
    )
    assert "shop (postgres" in text_of(listed) and "hr (" not in text_of(listed)
    assert hr.is_error and "no role on source `hr`" in text_of(hr)
    assert (shop.structured_content or {})["rows"] == [[2]]


def test_http_without_a_token_is_refused(http_sources: str) -> None:
    response = httpx2.post(http_sources, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=10)
    assert response.status_code == 401


def test_the_sources_command_lists_a_sources_file(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from sophrosyne.cli.app import app

    build_sqlite(tmp_path / "hr.sqlite")
    (tmp_path / "sources.toml").write_text(
        '[sources.hr]\npath = "hr.sqlite"\ndescription = "People."\n\n'
        f'[sources.demo]\npath = "{ROOT / "src" / "sophrosyne" / "data" / "demo.sqlite"}"\n'
    )
    result = CliRunner().invoke(app, ["sources", "--sources", str(tmp_path / "sources.toml"), "--json"])
    assert result.exit_code == 0, result.output
    listed = {s["name"]: s for s in json.loads(result.output)}
    assert listed["hr"]["description"] == "People." and listed["demo"]["dialect"] == "sqlite"
