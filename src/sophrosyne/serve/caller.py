"""Who calls, and which source, as which role, a tool call reads: with several sources the call names one
(`source=`)."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from pydantic import Field

from sophrosyne.environment import Environment
from sophrosyne.errors import AccessDenied
from sophrosyne.serve.calls import CLIENT
from sophrosyne.sources import Sources

Source = Annotated[str | None, Field(description="Source (list_sources); needed if several.")]


def caller_view(sources: Sources, source: str | None) -> Environment:
    """The named source as the caller's role: the token's role over HTTP, the started role otherwise."""
    name, env = sources.named(source)
    if env.policy is None:
        return env
    token = get_access_token()
    if token is None:
        return env
    roles = dict(scope.split("=", 1) for scope in token.scopes if "=" in scope)
    role = roles.get(name)
    if role is None:
        raise AccessDenied(f"your token gives no role on source `{name}`.", hint="Use a token of that source.")
    if role not in env.policy.roles:
        raise AccessDenied("the token's role no longer exists.", hint="Ask for a new token.")
    granted = env.policy.role(role)
    return env.for_role(granted, caller_key(granted.claims_read(), token.claims))


def caller_key(claimed: set[str], claims: dict[str, Any] | None) -> str:
    """Who the caller is to a role whose row filters read `claimed`: the values of those claims (hashed), so
    callers alike share a view and no other does; "" for a role that reads none."""
    if not claimed:
        return ""
    values = json.dumps([(claims or {}).get(name) for name in sorted(claimed)], default=str)
    return hashlib.sha256(values.encode()).hexdigest()[:32]


def client_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """Who sends a request, for its client's share of the threads (calls.py): over HTTP the bearer token the
    gate verified (hashed: no token is kept), else the client's address; otherwise the session."""
    headers = getattr(ctx.request, "headers", None)
    if headers is not None:
        # Only a verified token: an unchecked header could be made up anew for each call.
        if get_access_token() is not None:
            _, _, token = str(headers.get("authorization", "")).strip().partition(" ")
            return "token:" + hashlib.sha256(token.strip().encode()).hexdigest()[:16]
        address = getattr(ctx.request, "client", None)
        return f"address:{getattr(address, 'host', '')}"
    # Over stdio (or in-process) one connection is one session; its requests share it (the SDK's own field).
    return f"session:{id(getattr(ctx.session, '_connection', ctx.session))}"


class ClientKey:
    """Server middleware: each request runs as its client (calls.CLIENT), so its calls take that client's share."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        mark = CLIENT.set(client_of(ctx))
        try:
            return await call_next(ctx)
        finally:
            CLIENT.reset(mark)
