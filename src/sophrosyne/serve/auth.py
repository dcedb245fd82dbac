"""Bearer tokens over HTTP: the MCP endpoint needs a token that a source's policy lists, and says so plainly.

The tokens are the policy's own (sha256 hashes in `[tokens]`); no authorization server issues them, so none is
advertised: no OAuth metadata routes, no `resource_metadata` in the 401, which would send OAuth-capable clients
into a flow that cannot succeed. The 401 says what to send instead.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import TYPE_CHECKING

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from sophrosyne.sources import Sources

REALM = "sophrosyne"
HOW = (
    "send the header `Authorization: Bearer TOKEN` with a token listed (as its sha256) in the [tokens] table "
    "of the server's policy. This server offers no OAuth."
)


class PolicyTokens:
    """Bearer tokens to roles, from each source's hashed tokens (the SDK's TokenVerifier protocol).

    A token names one role per source whose policy lists it; the roles ride in the access token's scopes as
    `source=role`, so a source whose policy does not know the token refuses it.
    """

    def __init__(self, sources: Sources) -> None:
        self.sources = sources

    async def verify_token(self, token: str) -> AccessToken | None:
        roles = []
        for name, env in self.sources.environments.items():
            role = env.policy.role_for_token(token) if env.policy is not None else None
            if role is not None:
                roles.append(f"{name}={role.name}")
        if not roles:
            return None
        return AccessToken(token="", client_id="sophrosyne", scopes=roles)


def roles_of(user: object) -> dict[str, str] | None:
    """The caller's role by source, from the user the gate put in the request (None: no valid token)."""
    if not isinstance(user, AuthenticatedUser):
        return None
    return dict(scope.split("=", 1) for scope in user.access_token.scopes if "=" in scope)


class BearerGate:
    """ASGI middleware: a request to `path` (the MCP endpoint) without a valid token is answered 401; any
    request with a valid token carries its user (`scope["user"]`, as Starlette's authentication would), so the
    tools act as the token's roles and /health may show details to it."""

    def __init__(self, app: ASGIApp, tokens: PolicyTokens, paths: Collection[str] = ("/mcp",)) -> None:
        self.app = app
        self.tokens = tokens
        self.paths = tuple(paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = _bearer(scope)
        access = await self.tokens.verify_token(given) if given else None
        if access is None:
            if self._protects(scope["path"]):
                await _refuse(send, given is not None)
                return
        else:
            user = AuthenticatedUser(access)
            scope = {**scope, "user": user, "auth": AuthCredentials(access.scopes)}
        await self.app(scope, receive, send)

    def _protects(self, path: str) -> bool:
        return any(path == p or path.startswith(p.rstrip("/") + "/") for p in self.paths)


def _bearer(scope: Scope) -> str | None:
    """The token of the first Authorization header (None: no header; "" for another scheme or none)."""
    for name, value in scope["headers"]:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return None


async def _refuse(send: Send, token_given: bool) -> None:
    # RFC 6750: a request without credentials gets the scheme and realm only; a bad token, `invalid_token`.
    if token_given:
        error, description = "invalid_token", f"The bearer token is not one this server knows: {HOW}"
        challenge = f'Bearer realm="{REALM}", error="invalid_token"'
    else:
        error, description = "token_required", f"This server needs a bearer token: {HOW}"
        challenge = f'Bearer realm="{REALM}"'
    body = json.dumps({"error": error, "error_description": description}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
