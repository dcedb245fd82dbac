"""Bearer tokens over HTTP: the MCP endpoint needs a token that a source's policy lists, or an access token of
the policy's identity provider (`[identity]`), and says plainly why a token is refused.

Static tokens are the policy's own (sha256 hashes in `[tokens]`). With an identity provider the server is an
OAuth 2.1 resource server (MCP authorization): it publishes its protected-resource metadata (RFC 9728) naming
the provider, a 401 points to it (`resource_metadata`), and a JWT is checked offline (oauth.py), its claims
given a role by the policy's rules; an opaque token is asked of its introspection endpoint (introspection.py)
when the policy names one. Without one, no OAuth is advertised: no metadata routes, no
`resource_metadata`, which would send OAuth-capable clients into a flow that cannot succeed.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url
from pydantic import AnyHttpUrl
from starlette.authentication import AuthCredentials

from sophrosyne.errors import ConfigError
from sophrosyne.serve.refused import Refused
from sophrosyne.sql.policy.claims import CLAIMS
from sophrosyne.sql.policy.file import hash_token
from sophrosyne.sql.policy.identity import Identity

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from sophrosyne.serve.introspection import Introspector
    from sophrosyne.serve.oauth import JwtVerifier
    from sophrosyne.sources import Sources

REALM = "sophrosyne"
HOW = (
    "send the header `Authorization: Bearer TOKEN` with a token listed (as its sha256) in the [tokens] table "
    "of the server's policy. This server offers no OAuth."
)


def shared_identity(sources: Sources) -> Identity | None:
    """The identity provider of the sources' policies: one issuer, key set and resource for the whole server
    (each policy keeps its own claim rules); ConfigError when two policies name different ones."""
    found: Identity | None = None
    for name, env in sources.environments.items():
        identity = env.policy.identity if env.policy is not None else None
        if identity is None:
            continue
        if found is not None and _provider(found) != _provider(identity):
            raise ConfigError(
                f"the policy of source `{name}` names another identity provider or resource than another source's",
                hint="One server is one resource: give every policy the same issuer, jwks_url, introspection and "
                "resource.",
            )
        found = found or identity
    return found


def _provider(identity: Identity) -> tuple[object, ...]:
    return identity.issuer, identity.jwks_url, identity.resource, identity.introspection


class PolicyTokens:
    """Bearer tokens to roles, from each source's hashed tokens (the SDK's TokenVerifier protocol) and, with an
    identity provider, from the claims of its access tokens (`admit`).

    A token names one role per source whose policy gives it one; the roles ride in the access token's scopes as
    `source=role`, so a source whose policy does not know the token refuses it.
    """

    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        self.identity = shared_identity(sources)
        identity = self.identity
        self.jwt: JwtVerifier | None = None
        self.introspector: Introspector | None = None
        # Loaded only for an identity provider: JOSE and its keys are not needed to check a policy's own tokens.
        if identity is not None and identity.jwks_url:
            from sophrosyne.serve.oauth import JwtVerifier

            self.jwt = JwtVerifier(identity)
        if identity is not None and identity.introspection:
            from sophrosyne.serve.introspection import Introspector

            self.introspector = Introspector(identity)

    async def verify_token(self, token: str) -> AccessToken | None:
        roles = []
        for name, env in self.sources.environments.items():
            role = env.policy.role_for_token(token) if env.policy is not None else None
            if role is not None:
                roles.append(f"{name}={role.name}")
        if not roles:
            return None
        # Named in the audit by its hash's start: the token itself is never kept.
        return AccessToken(token="", client_id="sophrosyne", scopes=roles, subject="token:" + hash_token(token)[:16])

    async def admit(self, token: str) -> AccessToken:
        """The caller a token stands for; Refused (401: not a valid token, 403: valid, but no role) says why."""
        static = await self.verify_token(token)
        if static is not None:
            return static
        if self.identity is None:
            raise Refused(f"The bearer token is not one this server knows: {HOW}")
        claims = await self._claims(token)
        roles = []
        for name, env in self.sources.environments.items():
            identity = env.policy.identity if env.policy is not None else None
            role = identity.role_for(claims) if identity is not None else None
            if role is not None:
                roles.append(f"{name}={role}")
        if not roles:
            raise Refused(
                f"your token is valid, but no rule of the server's policy gives a role to its claims "
                f"(sub `{str(claims.get('sub'))[:80]}`); ask the server's operator for access.",
                status=403,
            )
        client = claims.get("azp") or claims.get("client_id") or "oauth"
        expires = claims.get("exp")
        return AccessToken(
            token="",
            client_id=str(client),
            scopes=roles,
            expires_at=int(expires) if isinstance(expires, int | float) else None,
            resource=self.identity.resource,
            subject=str(claims["sub"]),
            claims=claims,
        )

    async def _claims(self, token: str) -> dict[str, Any]:
        """A JWT is checked offline against the provider's keys; any other token (every token, without keys) is
        asked of the introspection endpoint."""
        if self.jwt is not None and (self.introspector is None or token.count(".") == 2):
            return await self.jwt.verify(token)
        assert self.introspector is not None  # parse_identity needs keys or introspection
        return await self.introspector.verify(token)

    def metadata_url(self) -> str | None:
        """Where the protected-resource metadata is (RFC 9728), with an identity provider."""
        return str(build_resource_metadata_url(AnyHttpUrl(self.identity.resource))) if self.identity else None


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
        access: AccessToken | None = None
        refused: Refused | None = None
        if given:
            try:
                access = await self.tokens.admit(given)
            except Refused as exc:
                refused = exc
        if access is None:
            if self._protects(scope["path"]):
                await _refuse(send, refused, given is not None, self.tokens.metadata_url())
                return
            await self.app(scope, receive, send)
            return
        user = AuthenticatedUser(access)
        scope = {**scope, "user": user, "auth": AuthCredentials(access.scopes)}
        # The claims a role's row filters may read (policy/claims.py), for this request only.
        mark = CLAIMS.set(access.claims)
        try:
            await self.app(scope, receive, send)
        finally:
            CLAIMS.reset(mark)

    def _protects(self, path: str) -> bool:
        return any(path == p or path.startswith(p.rstrip("/") + "/") for p in self.paths)


def _bearer(scope: Scope) -> str | None:
    """The token of the first Authorization header (None: no header; "" for another scheme or none)."""
    for name, value in scope["headers"]:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return None


async def _refuse(send: Send, refused: Refused | None, token_given: bool, metadata: str | None) -> None:
    # RFC 6750: a request without credentials gets the scheme and realm only; a bad token, `invalid_token`; a
    # valid one without a role, 403 `insufficient_scope`. With an identity provider, every challenge names the
    # resource metadata (RFC 9728 section 5.1), where a client finds the authorization server.
    status = 401
    if refused is not None:
        status = refused.status
        error = "invalid_token" if status == 401 else "insufficient_scope"
        description = refused.reason
    elif token_given:
        error, description = "invalid_token", "The Authorization header must use the Bearer scheme."
    else:
        error = "token_required"
        description = "This server needs a bearer token: " + (
            "an access token of its identity provider (see the resource metadata)." if metadata else HOW
        )
    parts = [f'realm="{REALM}"']
    if refused is not None or token_given:
        parts.append(f'error="{error}"')
    if metadata is not None:
        parts.append(f'resource_metadata="{metadata}"')
    body = json.dumps({"error": error, "error_description": description}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", ("Bearer " + ", ".join(parts)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
