"""Which source, as which role, a tool call reads: with several sources the call names one (`source=`)."""

from __future__ import annotations

from typing import Annotated

from mcp.server.auth.middleware.auth_context import get_access_token
from pydantic import Field

from sophrosyne.environment import Environment
from sophrosyne.errors import AccessDenied
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
    return env.for_role(env.policy.role(role))
