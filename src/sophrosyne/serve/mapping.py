"""The one place a tool call meets MCP: run under its deadline, audited, its errors made MCP tool errors; and the
one audit of every read (tools, resources, prompts, completions)."""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from sophrosyne.audit import AuditLog, statements
from sophrosyne.base.text import estimate_tokens
from sophrosyne.errors import SophrosyneError
from sophrosyne.serve.caller import caller_view
from sophrosyne.serve.calls import Calls, Pool
from sophrosyne.sources import Sources
from sophrosyne.tools.base import render_error

logger = logging.getLogger("sophrosyne.mcp")

# The longest error text a client is sent (a message may quote a long input).
ERROR_CHARS = 1000

ToolFn = Callable[..., CallToolResult]
AsyncToolFn = Callable[..., Awaitable[CallToolResult]]

T = TypeVar("T")

SESSION = uuid.uuid4().hex[:12]  # one server process; HTTP callers are told apart by their role


def map_calls(
    sources: Sources, audit: AuditLog | None, calls: Calls, seconds: float | None = None, pool: Pool = "tools"
) -> Callable[[ToolFn], AsyncToolFn]:
    """The one place where environment errors become MCP tool errors (internals never leave the server)
    and where each call is audited: role, arguments, SQL as written and executed, rows, time, tokens.

    Each call runs in a worker thread of `pool` under its deadline (`timeout_s`, or `seconds`), within its
    client's share of the threads (a client past it waits, or is told it is busy: Busy), so a slow call never
    holds up another, and a call whose client cancelled or left stops its work and its statement."""
    calls.configure(sources.settings)

    def decorate(fn: ToolFn) -> ToolFn:
        def audited(*args: Any, **kwargs: Any) -> CallToolResult:
            work = functools.partial(_guarded, fn, args, kwargs)
            return run_audited(audit, sources, fn.__name__, kwargs, kwargs.get("source"), work, _texts)

        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> CallToolResult:
            try:
                limit = seconds if seconds is not None else sources.settings.limits.timeout_s
                return await calls.run(functools.partial(audited, *args, **kwargs), limit, pool)
            except SophrosyneError as exc:  # refused before it ran (busy, draining), or stopped at the deadline
                raise _ToolFailure(exc) from None

        return wrapper  # type: ignore[return-value]

    return decorate  # type: ignore[return-value]


def run_audited(
    audit: AuditLog | None,
    sources: Sources,
    name: str,
    arguments: dict[str, Any],
    source: str | None,
    work: Callable[[], T],
    texts: Callable[[T], Iterable[str]],
) -> T:
    """Run `work` and write its audit record: the caller's role on `source`, `name` (a tool, or an MCP method
    such as `resources/read`), `arguments`, the SQL it ran as written and executed, rows, time, the tokens of
    its `texts`, and its error. Tools, resources, prompts and completions are each audited through here."""
    if audit is None:
        return work()
    try:
        view = caller_view(sources, source)
        role, dialect = view.role.name, view.dialect
    except SophrosyneError:
        role, dialect = "", ""  # the call itself reports the error
    token = get_access_token()
    subject = token.subject if token is not None else None
    email = (token.claims or {}).get("email") if token is not None else None
    with (
        audit.call(SESSION, role, name, arguments, subject, email if isinstance(email, str) else None) as record,
        statements() as ran,
    ):
        record.dialect = dialect
        try:
            result = work()
        finally:
            if ran:
                record.sql_written = "\n;\n".join(s.written for s in ran)
                record.sql_executed = "\n;\n".join(s.executed for s in ran)
                record.rows = sum(s.rows for s in ran)
        record.response_tokens = sum(estimate_tokens(text) for text in texts(result))
        return result


def _texts(result: CallToolResult) -> list[str]:
    return [c.text for c in result.content if isinstance(c, TextContent)]


def _guarded(fn: ToolFn, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CallToolResult:
    try:
        return fn(*args, **kwargs)
    except SophrosyneError as exc:
        raise _ToolFailure(exc) from None
    except Exception:
        logger.exception("tool %s failed", fn.__name__)
        raise ToolError("internal error; the server log has the details.") from None


class _ToolFailure(ToolError):
    """A fixable error for the agent; keeps the original so the audit record names its code."""

    def __init__(self, error: SophrosyneError) -> None:
        # The engine's own words (which may quote data) in a data block; ours, and any name in them, escaped.
        super().__init__(render_error(error, ERROR_CHARS))
        self.error = error
