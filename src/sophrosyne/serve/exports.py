"""Exports over MCP (export_sql is a tool of the registry, served with `allow_exports`): each request's caller,
the caller's exports as resources read in pages, and over HTTP the download of a file by the caller that made
it (its bearer token), nobody else.

Whose an export is: over HTTP the bearer token (hashed), or the client's address when the server has no tokens;
over stdio, in process and in the Python API, the one local caller. Another caller's export reads exactly like
a missing one, in every route.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import Resource, ResourceTemplate

from sophrosyne.errors import SophrosyneError, UnknownExport
from sophrosyne.exports.pages import page_count, read_page
from sophrosyne.exports.store import LOCAL, ExportRecord, ExportStore, caller, calling_as
from sophrosyne.serve.caller import client_of
from sophrosyne.serve.calls import CLIENT
from sophrosyne.serve.mapping import run_audited
from sophrosyne.tools.export_sql import SCHEME

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from starlette.requests import Request
    from starlette.responses import Response

    from sophrosyne.audit import AuditLog
    from sophrosyne.sandbox.executor import Exports
    from sophrosyne.serve.calls import Calls
    from sophrosyne.sources import Sources

# sophrosyne://exports/ID (its first page) or sophrosyne://exports/ID/N (page N, from 1).
_URI = re.compile(re.escape(SCHEME) + r"([A-Za-z0-9_-]{22})(?:/([1-9][0-9]{0,9}))?")
TEMPLATES = [
    ResourceTemplate(
        name="export",
        title="An export of yours (export_sql), its first page",
        uri_template=SCHEME + "{id}",
        description="The file export_sql wrote: CSV as text, Parquet as bytes, in pages (_meta: page, pages, next).",
    ),
    ResourceTemplate(name="export_page", title="A page of an export", uri_template=SCHEME + "{id}/{page}"),
]


def token_key(authorization: str) -> str:
    """Whose calls these are, for a verified bearer token: its hash (no token is kept)."""
    _, _, token = authorization.strip().partition(" ")
    return "token:" + hashlib.sha256(token.strip().encode()).hexdigest()[:16]


def owner_of(client: str) -> str:
    """Whose exports a client's calls make and read: its key over HTTP (a token's hash, or an address), else
    the one local caller (stdio, in process)."""
    return client if client.startswith(("token:", "address:")) else LOCAL


class ExportCaller:
    """Server middleware: each request makes and reads exports as its client (exports/store.py's caller)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        with calling_as(owner_of(client_of(ctx))):
            return await call_next(ctx)


def export_resources(sources: Sources) -> list[Resource]:
    """The caller's exports, as resources (newest first)."""
    store = ExportStore(sources.settings)
    return [
        Resource(
            uri=SCHEME + record.id,
            name=f"exports/{record.id}",
            title=record.file_name,
            description=f"{record.rows:,} rows of {record.source} ({', '.join(record.columns)[:200]})",
            mime_type=record.mime_type,
            size=record.bytes,
        )
        for record in store.listed(caller())
    ]


def is_export_uri(uri: str) -> bool:
    return uri.startswith(SCHEME)


def read_export(sources: Sources, uri: str) -> ReadResourceContents:
    """One page of the caller's export; an unknown id, another caller's, or a page past the end, is an error."""
    match = _URI.fullmatch(uri)
    if match is None:
        raise UnknownExport(
            "an export's URI is sophrosyne://exports/ID, or .../ID/PAGE for a later page.",
            hint="Use the URI export_sql gave.",
        )
    store = ExportStore(sources.settings)
    record = store.get(caller(), match.group(1))
    size = sources.settings.exports.export_page_bytes
    page, pages = int(match.group(2) or 1), page_count(record, size)
    content = read_page(record, page, size)
    meta: dict[str, Any] = {"page": page, "pages": pages, "rows": record.rows, "bytes": record.bytes}
    if page < pages:
        meta["next"] = f"{SCHEME}{record.id}/{page + 1}"
    return ReadResourceContents(content=content, mime_type=record.mime_type, meta=meta)


async def audited_read(
    sources: Sources, calls: Calls, audit: AuditLog | None, uri: str
) -> Iterable[ReadResourceContents]:
    """resources/read of an export, audited and run in a worker thread like every read."""
    work = functools.partial(read_export, sources, uri)
    read = functools.partial(run_audited, audit, sources, "resources/read", {"uri": uri}, None, work, _no_text)
    try:
        contents: ReadResourceContents = await calls.run(read, sources.settings.limits.timeout_s)
    except SophrosyneError as exc:
        raise ResourceError(str(exc)) from None
    return [contents]


def add_download(server: MCPServer, sources: Sources, calls: Calls, audit: AuditLog | None) -> None:
    """GET /exports/ID over HTTP: the file, to the caller that made it; 404 to anyone else, alike for any id."""
    from starlette.responses import FileResponse, JSONResponse

    @server.custom_route("/exports/{export_id}", methods=["GET"])  # type: ignore[untyped-decorator]
    async def download(request: Request) -> Response:
        export_id = str(request.path_params.get("export_id", ""))
        if get_access_token() is not None:
            caller = token_key(request.headers.get("authorization", ""))
        else:
            caller = f"address:{request.client.host if request.client else ''}"
        mark = CLIENT.set(caller)  # the download takes its client's share of the threads
        try:
            with calling_as(caller):
                work = functools.partial(ExportStore(sources.settings).get, caller, export_id)
                said = {"id": export_id}
                find = functools.partial(run_audited, audit, sources, "exports/download", said, None, work, _no_text)
                record: ExportRecord = await calls.run(find, sources.settings.limits.timeout_s)
        except SophrosyneError as exc:
            status = 404 if isinstance(exc, UnknownExport) else 503
            return JSONResponse({"error": exc.code, "error_description": str(exc)}, status_code=status)
        finally:
            CLIENT.reset(mark)
        return FileResponse(
            record.path,
            media_type=record.mime_type,
            filename=record.file_name,
            headers={"cache-control": "no-store", "x-content-type-options": "nosniff"},
        )


def _no_text(result: object) -> list[str]:
    return []


def install_exports(server: Any, sources: Sources, calls: Calls, audit: AuditLog | None) -> None:
    """What serving exports adds to `server` (a SophrosyneMCP): their reading in pages, the download route,
    and each request's caller (the caller's exports are listed with the tables: export_resources)."""
    add_download(server, sources, calls, audit)
    server.export_reader = functools.partial(audited_read, sources, calls, audit)
    server.middleware.append(ExportCaller())


def program_exports(sources: Sources) -> Exports:
    """The caller's exports, for its run_python program to read (export(id))."""
    from sophrosyne.sandbox.executor import Exports

    store = ExportStore(sources.settings)
    mine = caller()
    files = {
        r.id: {
            "path": str(r.path),
            "format": r.format,
            "rows": r.rows,
            "columns": r.columns,
            "source": r.source,
            "created": r.created,
        }
        for r in store.listed(mine)
    }
    return Exports(store.folder(mine), files)
