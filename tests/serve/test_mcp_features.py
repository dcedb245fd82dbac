"""Prompts, table resources and completions through a real MCP client session (issue 21, item 13), under a
restricted role: what the role may not read is neither listed, readable nor completed."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.types import PromptReference, ResourceTemplateReference

from fixtures.engines import build_sqlite
from sophrosyne.environment import Environment
from sophrosyne.serve.features import TEMPLATE, Notices, table_uri
from sophrosyne.serve.server import build_server
from sophrosyne.sql.policy import Role, TableRule

CLERK = Role(name="clerk", denied=["salaries"], tables={"employees": TableRule(hidden=["email"])})


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as portal:
        yield portal


@pytest.fixture(scope="module")
def clerk(portal: BlockingPortal, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    env = Environment.open(build_sqlite(tmp_path_factory.mktemp("features") / "hr.sqlite"))
    client = Client(build_server(env.for_role(CLERK)))
    with portal.wrap_async_context_manager(client) as opened:
        yield opened
    env.db.close()


def call(portal: BlockingPortal, fn: Any, *args: Any, **kwargs: Any) -> Any:
    return portal.call(functools.partial(fn, *args, **kwargs))


def test_the_server_claims_prompts_resources_and_completions(portal: BlockingPortal, clerk: Client) -> None:
    capabilities = clerk.server_capabilities
    assert capabilities is not None
    assert capabilities.prompts is not None and capabilities.resources is not None
    assert capabilities.completions is not None


def test_the_explore_prompt_carries_the_workflow_and_the_question(portal: BlockingPortal, clerk: Client) -> None:
    prompts = {p.name: p for p in call(portal, clerk.list_prompts).prompts}
    assert set(prompts) == {"explore", "ground"}
    assert [a.name for a in prompts["explore"].arguments or []] == ["question", "knowledge"]
    got = call(portal, clerk.get_prompt, "explore", {"question": "Who was absent in November?"})
    text = got.messages[0].content.text
    assert "list_tables(question, knowledge)" in text and "Question: Who was absent in November?" in text
    ground = call(portal, clerk.get_prompt, "ground", {"table": "departments", "column": "dept_name", "value": "ops"})
    assert 'get_distinct_values(table="departments", column="dept_name",\nsearch="ops")' in (
        ground.messages[0].content.text
    )


def test_tables_are_resources_only_where_the_role_may_read_them(portal: BlockingPortal, clerk: Client) -> None:
    listed = {str(r.uri) for r in call(portal, clerk.list_resources).resources}
    source = "hr"  # the source is named after the database file
    assert table_uri(source, "employees") in listed and table_uri(source, "departments") in listed
    assert not any(u.endswith("/salaries") for u in listed)
    templates = call(portal, clerk.list_resource_templates).resource_templates
    assert [t.uri_template for t in templates] == [TEMPLATE]
    text = call(portal, clerk.read_resource, table_uri(source, "employees")).contents[0].text
    assert "table employees" in text and "email" not in text  # the hidden column is absent
    spaced = call(portal, clerk.read_resource, table_uri(source, "Order Details")).contents[0].text
    assert spaced.startswith("table Order Details")
    # A denied table reads exactly like a missing one.
    said = {}
    for name in ("salaries", "no_such_table"):
        with pytest.raises(MCPError) as refused:
            call(portal, clerk.read_resource, table_uri(source, name))
        # The hint suggests close names the role may read: it depends on those names only.
        said[name] = str(refused.value).replace(name, "NAME").split(" Hint:")[0]
    assert said["salaries"] == said["no_such_table"]
    assert said["salaries"] == "no table `NAME` in hr."


def test_completions_offer_only_names_the_role_sees(portal: BlockingPortal, clerk: Client) -> None:
    template = ResourceTemplateReference(type="ref/resource", uri=TEMPLATE)
    tables = call(portal, clerk.complete, template, {"name": "table", "value": "sa"}).completion.values
    assert "salaries" not in tables
    everything = call(portal, clerk.complete, template, {"name": "table", "value": ""}).completion.values
    assert "employees" in everything and "salaries" not in everything
    prompt = PromptReference(type="ref/prompt", name="ground")
    columns = call(
        portal, clerk.complete, prompt, {"name": "column", "value": ""}, context_arguments={"table": "employees"}
    ).completion.values
    assert "employee_id" in columns and "email" not in columns
    sources = call(portal, clerk.complete, prompt, {"name": "source", "value": ""}).completion.values
    assert len(sources) == 1


# Some tenths of a second of work on SQLite: longer than the notices' tick below.
SLOW = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000) SELECT COUNT(*) FROM c"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_long_call_sends_progress_and_the_chosen_log_level_is_honoured(
    portal: BlockingPortal, tmp_path: Path, mode: str
) -> None:
    env = Environment.open(build_sqlite(tmp_path / "hr.sqlite"))
    logged: list[tuple[str, str]] = []
    progress: list[float] = []

    async def on_log(params: Any) -> None:
        logged.append((params.level, str(params.data)))

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async def session() -> Any:
        server = build_server(env, notices=Notices(every_s=0.05, slow_s=0.05))
        async with Client(server, logging_callback=on_log, mode=mode) as client:
            quiet = await client.call_tool("execute_sql", {"sql": "SELECT nope FROM employees"})
            assert quiet.is_error and not logged  # no level chosen: nothing is sent
            if mode == "legacy":
                with pytest.warns(MCPDeprecationWarning):  # the SDK's word for 2026-07-28, not for this connection
                    await client.set_logging_level("info")
            started = time.monotonic()
            slow = await client.call_tool("execute_sql", {"sql": SLOW}, progress_callback=on_progress)
            failed = await client.call_tool("execute_sql", {"sql": "SELECT nope FROM employees"})
            return slow, failed, time.monotonic() - started

    try:
        slow, failed, seconds = portal.call(session)
    finally:
        env.db.close()
    assert not slow.is_error and failed.is_error and seconds > 0.1
    if mode == "auto":
        # Protocol 2026-07-28: this client asks for no progress, and logging is deprecated there.
        assert not progress and not logged
        return
    assert progress and progress == sorted(progress)
    assert ("info", next(t for _, t in logged if t.startswith("execute_sql took"))) in logged
    assert any(level == "warning" and "execute_sql failed" in t and "nope" in t for level, t in logged), logged


async def _hears_a_new_table(database: Path, mode: str) -> tuple[int, bool, int]:
    import sqlite3

    import anyio
    from mcp.client.stdio import stdio_client

    from fixtures.serving import stdio_params

    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", "") == "notifications/resources/list_changed":
            heard.set()

    params = stdio_params(str(database), env={"SOPHROSYNE_SCHEMA_CHECK_S": "0"})
    async with Client(stdio_client(params), message_handler=on_message, mode=mode) as client:  # type: ignore[arg-type]
        before = len((await client.list_resources()).resources)

        def add_a_table() -> None:
            with sqlite3.connect(database) as db:
                db.execute("CREATE TABLE projects (project_id INTEGER PRIMARY KEY, name TEXT)")

        with anyio.fail_after(20):
            if mode == "legacy":
                add_a_table()
                await heard.wait()
            else:  # the stream is open before the change: events are not replayed
                async with client.listen(resources_list_changed=True) as changes:
                    add_a_table()
                    async for _ in changes:
                        heard.set()
                        break
        return before, heard.is_set(), len((await client.list_resources()).resources)


@pytest.mark.parametrize("mode", ["legacy", "auto"], ids=["handshake-era", "2026-07-28 listen"])
def test_a_table_added_while_serving_is_told_as_a_changed_resource_list(tmp_path: Path, mode: str) -> None:
    import anyio

    before, heard, after = anyio.run(_hears_a_new_table, build_sqlite(tmp_path / "hr.sqlite"), mode)
    assert heard and after == before + 1


async def _listens_over_http(url: str, database: Path) -> bool:
    import sqlite3

    import anyio
    from mcp.client.streamable_http import streamable_http_client

    async with Client(streamable_http_client(url)) as client, client.listen(resources_list_changed=True) as changes:
        with sqlite3.connect(database) as db:
            db.execute("CREATE TABLE projects (project_id INTEGER PRIMARY KEY, name TEXT)")
        with anyio.fail_after(20):
            async for _ in changes:
                return True
    return False


def test_a_listen_stream_over_http_hears_a_table_added(tmp_path: Path) -> None:
    # Stateless HTTP keeps no connection to tell: a 2026-07-28 client's subscriptions/listen stream hears it.
    import anyio

    from fixtures.serving import http_server

    database = build_sqlite(tmp_path / "hr.sqlite")
    with http_server(str(database), env={"SOPHROSYNE_SCHEMA_CHECK_S": "0"}) as (_, port):
        assert anyio.run(_listens_over_http, f"http://127.0.0.1:{port}/mcp", database)
