"""export_sql over MCP with the SDK's client: the answer (a preview and a resource link, not the rows), the
export as a resource read in pages, progress while it runs, cancellation, the audit; over HTTP, the caller's
token alone lists, reads and downloads its exports."""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import ResourceLink, TextContent

from fixtures.engines import build_sqlite
from fixtures.policies import POLICY, TOKENS
from fixtures.serving import http_server
from sophrosyne.base import deadline
from sophrosyne.base.text import estimate_tokens
from sophrosyne.environment import Environment
from sophrosyne.errors import CallCancelled
from sophrosyne.exports.store import ExportStore
from sophrosyne.serve.features import Notices
from sophrosyne.serve.server import build_server
from sophrosyne.settings import Settings

# Rows as fast as SQLite makes them, for as long as it is let.
ENDLESS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) "
    "SELECT x, 'some text to write' AS t FROM c"
)


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as portal:
        yield portal


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Environment]:
    settings = Settings(
        export_dir=tmp_path / "exports",
        audit_log=tmp_path / "audit.jsonl",
        export_page_bytes=1024,
        allow_exports=True,
    )
    environment = Environment.open(build_sqlite(tmp_path / "hr.sqlite"), settings=settings)
    yield environment
    environment.close()


def texts(result: Any) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def test_an_export_answers_with_a_link_read_in_pages(portal: BlockingPortal, env: Environment) -> None:
    async def session() -> tuple[Any, ...]:
        async with Client(build_server(env)) as client:
            sql = "SELECT a.*, e.full_name FROM absence_records a JOIN employees e USING (employee_id)"
            result = await client.call_tool("export_sql", {"sql": sql})
            link = next(c for c in result.content if isinstance(c, ResourceLink))
            listed = await client.list_resources()
            templates = await client.list_resource_templates()
            pages, uri = [], str(link.uri)
            while uri:
                read = await client.read_resource(uri)
                content = read.contents[0]
                pages.append(content.text)  # type: ignore[union-attr]
                uri = (content.meta or {}).get("next", "")
            return result, link, listed, templates, pages

    result, link, listed, templates, pages = portal.call(session)
    text = texts(result)
    assert not result.is_error and "exported 60 rows, 6 columns" in text
    assert estimate_tokens(text) < 600
    record = ExportStore(env.settings).get("local", str(link.uri).rsplit("/", 1)[-1])
    assert f"file: {record.path}" in text  # a local (stdio, in-process) caller is told the path
    assert str(link.uri) in {str(r.uri) for r in listed.resources}
    assert any(t.uri_template == "sophrosyne://exports/{id}" for t in templates.resource_templates)
    assert len(pages) > 1 and "".join(pages) == record.path.read_bytes().decode()


def test_a_parquet_export_reads_as_bytes(portal: BlockingPortal, env: Environment) -> None:
    async def session() -> tuple[Any, bytes]:
        async with Client(build_server(env)) as client:
            result = await client.call_tool("export_sql", {"sql": "SELECT * FROM employees", "format": "parquet"})
            link = next(c for c in result.content if isinstance(c, ResourceLink))
            read = await client.read_resource(str(link.uri))
            return link, base64.b64decode(read.contents[0].blob)  # type: ignore[union-attr]

    link, first = portal.call(session)
    assert link.mime_type == "application/vnd.apache.parquet" and first.startswith(b"PAR1")


def test_a_long_export_tells_its_rows_and_a_cancelled_one_leaves_no_file(
    portal: BlockingPortal, env: Environment
) -> None:
    heard: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        heard.append(message or "")

    async def session() -> None:
        async with Client(build_server(env, notices=Notices(every_s=0.1)), mode="legacy") as client:
            call = functools.partial(client.call_tool, "export_sql", {"sql": ENDLESS}, progress_callback=on_progress)
            async with anyio.create_task_group() as group:
                group.start_soon(call)
                with anyio.move_on_after(30):  # until the rows written are told (seconds under load)
                    while not any("bytes written" in h for h in heard):
                        await anyio.sleep(0.05)
                group.cancel_scope.cancel()  # the client cancels the call

    portal.call(session)
    folder = ExportStore(env.settings).folder("local")
    stopped = time.monotonic() + 30
    while any(folder.iterdir()) and time.monotonic() < stopped:
        time.sleep(0.05)
    assert any("rows" in h and "bytes written" in h for h in heard), heard
    assert list(folder.iterdir()) == []


def test_a_cancelled_export_stops_and_removes_its_file(env: Environment) -> None:
    running = deadline.Deadline(60)
    failed: list[BaseException] = []

    def export() -> None:
        with deadline.within(running):
            try:
                env.export_sql(ENDLESS)
            except BaseException as exc:
                failed.append(exc)

    thread = threading.Thread(target=export)
    thread.start()
    folder = ExportStore(env.settings).folder("local", create=True)
    while not any(p.stat().st_size > 100_000 for p in folder.iterdir()):
        time.sleep(0.01)
    running.cancel()
    thread.join(10)
    assert isinstance(failed[0], CallCancelled) and list(folder.iterdir()) == []


def test_bounds_cut_or_stop_an_export(env: Environment) -> None:
    from sophrosyne.errors import ExportTooLarge

    capped = env.export_sql("SELECT * FROM employees", limit=5)
    assert capped.rows == 5 and capped.truncated and "export_max_rows" in texts_of(capped)
    small = Environment(env.db, settings=env.settings.replaced(export_max_bytes=1_000_000))
    with pytest.raises(ExportTooLarge, match="export_max_bytes"):
        small.export_sql(ENDLESS)
    assert [r.id for r in ExportStore(env.settings).listed("local")] == [capped.id]


def test_exports_are_audited(portal: BlockingPortal, env: Environment) -> None:
    async def session() -> None:
        async with Client(build_server(env)) as client:
            result = await client.call_tool("export_sql", {"sql": "SELECT dept_name FROM departments"})
            link = next(c for c in result.content if isinstance(c, ResourceLink))
            await client.read_resource(str(link.uri))

    portal.call(session)
    assert env.settings.paths.audit_log is not None
    records = [json.loads(line) for line in env.settings.paths.audit_log.read_text().splitlines()]
    export = next(r for r in records if r.get("tool") == "export_sql")
    assert "dept_name" in export["sql_executed"] and export["rows"] == 5
    assert any(r.get("tool") == "resources/read" and "exports" in json.dumps(r) for r in records)


def texts_of(result: Any) -> str:
    from sophrosyne.tools.base import render

    return render(result)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("exports_http")
    policy = folder / "policy.toml"
    policy.write_text(POLICY)
    exports = folder / "exports"
    variables = {"SOPHROSYNE_EXPORT_DIR": str(exports), "SOPHROSYNE_ALLOW_EXPORTS": "true"}
    with http_server(str(build_sqlite(folder / "hr.sqlite")), "--policy", str(policy), env=variables) as (_, port):
        yield f"http://127.0.0.1:{port}", exports


async def _export_and_look(base: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with contextlib.AsyncExitStack() as stack:
        ops, admin = [
            await stack.enter_async_context(
                Client(
                    streamable_http_client(
                        f"{base}/mcp",
                        http_client=await stack.enter_async_context(
                            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
                        ),
                    )
                )
            )
            for token in (TOKENS["ops"], TOKENS["admin"])
        ]
        result = await ops.call_tool("export_sql", {"sql": "SELECT * FROM employees", "name": "../../etc/x"})
        seen["text"] = texts(result)
        link = next(c for c in result.content if isinstance(c, ResourceLink))
        seen["uri"] = str(link.uri)
        seen["ops_list"] = {str(r.uri) for r in (await ops.list_resources()).resources}
        seen["admin_list"] = {str(r.uri) for r in (await admin.list_resources()).resources}
        seen["ops_read"] = (await ops.read_resource(seen["uri"])).contents[0]
        try:
            await admin.read_resource(seen["uri"])
            seen["admin_read"] = "read"
        except Exception as exc:
            seen["admin_read"] = str(exc)
    return seen


def test_only_the_token_that_made_an_export_lists_reads_or_downloads_it(served: tuple[str, Path]) -> None:
    base, exports = served
    seen = anyio.run(_export_and_look, base)
    export_id = seen["uri"].rsplit("/", 1)[-1]
    assert "download: GET /exports/" in seen["text"] and str(exports) not in seen["text"]  # no server path
    assert seen["uri"] in seen["ops_list"] and seen["uri"] not in seen["admin_list"]
    assert "hire_date" not in seen["ops_read"].text  # the ops role's hidden column
    assert "no export" in seen["admin_read"]
    with httpx2.Client(timeout=10) as http:
        mine = http.get(f"{base}/exports/{export_id}", headers={"Authorization": f"Bearer {TOKENS['ops']}"})
        other = http.get(f"{base}/exports/{export_id}", headers={"Authorization": f"Bearer {TOKENS['admin']}"})
        nobody = http.get(f"{base}/exports/{export_id}")
        ops = {"Authorization": f"Bearer {TOKENS['ops']}"}
        traversal = http.get(f"{base}/exports/..%2F..%2Fpolicy.toml", headers=ops)
    assert mine.status_code == 200 and mine.text == seen["ops_read"].text
    assert 'filename="etc_x.csv"' in mine.headers["content-disposition"]
    assert other.status_code == 404 and "employees" not in other.text.lower()
    assert nobody.status_code == 401 and traversal.status_code in (401, 404)


def test_export_sql_is_served_only_when_allowed(portal: BlockingPortal, env: Environment) -> None:
    async def names(server: Any) -> tuple[list[str], list[str], Any]:
        async with Client(server) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
            export = next((t for t in (await client.list_tools()).tools if t.name == "export_sql"), None)
            return tools, templates, export

    quiet = Environment(env.db, settings=env.settings.replaced(allow_exports=False))
    tools, templates, _ = portal.call(names, build_server(quiet))
    assert "export_sql" not in tools and not any("exports" in t for t in templates)
    tools, templates, export = portal.call(names, build_server(env))
    assert "export_sql" in tools and "sophrosyne://exports/{id}/{page}" in templates
    # It writes a file on the server: not read-only, not destructive.
    assert export.annotations.read_only_hint is False and export.annotations.destructive_hint is False


def test_a_program_reads_its_callers_exports(portal: BlockingPortal, env: Environment) -> None:
    from sophrosyne.errors import SandboxUnavailable
    from sophrosyne.sandbox.executor import check_sandbox

    try:
        check_sandbox()
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    made = env.export_sql("SELECT employee_id, full_name FROM employees", format="parquet")
    code = f"df = export({made.id!r})\nresult = [[len(df), list(df.columns), len(exports())]]"

    async def session() -> Any:
        async with Client(build_server(env, allow_python=True)) as client:
            return await client.call_tool("run_python", {"code": code})

    result = portal.call(session)
    assert not result.is_error, texts(result)
    assert result.structured_content["rows"] == [[24, "['employee_id', 'full_name']", 1]]


def test_a_role_limited_to_declared_tools_exports_nothing(env: Environment) -> None:
    from sophrosyne.errors import AccessDenied
    from sophrosyne.sql.policy import Role

    limited = env.for_role(Role("clerk", free_sql=False))
    with pytest.raises(AccessDenied, match="declares"):
        limited.export_sql("SELECT * FROM employees")
    assert ExportStore(env.settings).listed("local") == []
