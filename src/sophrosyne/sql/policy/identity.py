"""The policy's `[identity]`: which identity provider's tokens the server accepts (JWTs checked against its keys,
opaque tokens asked of its introspection endpoint), for which resource, and the rules that give a caller's
claims a role (first match wins; no match is refused, never a default role)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sophrosyne.errors import ConfigError

_IDENTITY_KEYS = {"issuer", "jwks_url", "resource", "leeway_s", "algorithms", "groups_claim", "rules", "introspection"}
_INTROSPECTION_KEYS = {"url", "client_id", "client_secret_env", "max_age_s"}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_RULE_KEYS = {"role", "group", "scope", "email_domain"}
_MATCHES = ("group", "scope", "email_domain")
# Public-key algorithms only: a symmetric one (HS256) would let a token signed with the published public key
# pass as genuine, and `none` is no signature at all.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class ClaimRule:
    """A caller whose claims hold `value` (a group in the groups claim, a scope, an email's domain) gets `role`."""

    role: str
    kind: str  # group, scope or email_domain
    value: str

    def matches(self, claims: Mapping[str, Any], groups_claim: str) -> bool:
        if self.kind == "group":
            groups = claims.get(groups_claim)
            return isinstance(groups, list) and self.value in groups
        if self.kind == "scope":
            return self.value in _scopes(claims)
        email = claims.get("email")
        if not isinstance(email, str) or claims.get("email_verified") is False:
            return False  # an address the provider says it did not verify names no domain
        _, at, domain = email.rpartition("@")
        return bool(at) and domain.casefold() == self.value.casefold()


@dataclass(frozen=True)
class Introspection:
    """The provider's token introspection endpoint (RFC 7662), the client credentials the server asks it with
    (the secret read from the environment variable `client_secret_env`), and how long an answer is kept."""

    url: str
    client_id: str
    client_secret_env: str
    max_age_s: int = 60
    client_secret: str = field(default="", repr=False, compare=False)


@dataclass(frozen=True)
class Identity:
    """The identity provider (issuer, its JWKS and/or its introspection endpoint), this server's resource URL
    (the tokens' audience), and the claim rules, in order."""

    issuer: str
    jwks_url: str | None
    resource: str
    rules: tuple[ClaimRule, ...]
    leeway_s: int = 30
    algorithms: tuple[str, ...] = ALGORITHMS
    groups_claim: str = "groups"
    introspection: Introspection | None = None

    def role_for(self, claims: Mapping[str, Any]) -> str | None:
        """The role of the first rule the claims match, or None (refused)."""
        for rule in self.rules:
            if rule.matches(claims, self.groups_claim):
                return rule.role
        return None


def _scopes(claims: Mapping[str, Any]) -> list[str]:
    """The token's scopes: `scope` (space-separated, RFC 8693/9068) or `scp` (a list, as some providers send)."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    scp = claims.get("scp")
    return [s for s in scp if isinstance(s, str)] if isinstance(scp, list) else []


def parse_identity(data: Any, roles: Mapping[str, Any]) -> Identity:
    """The `[identity]` table, checked: ConfigError says which key is wrong and what to write."""
    if not isinstance(data, dict):
        raise ConfigError("`identity` must be a table", hint="write [identity] with issuer, jwks_url and resource")
    unknown = sorted(set(data) - _IDENTITY_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown key `identity.{unknown[0]}`", hint=f"expected one of: {', '.join(sorted(_IDENTITY_KEYS))}"
        )
    introspection = _introspection(data["introspection"]) if "introspection" in data else None
    issuer, resource = _url(data, "issuer"), _url(data, "resource")
    # Without JWKS every token is introspected; one of the two is needed.
    jwks_url = _url(data, "jwks_url") if "jwks_url" in data or introspection is None else None
    leeway = data.get("leeway_s", 30)
    if isinstance(leeway, bool) or not isinstance(leeway, int) or not 0 <= leeway <= 300:
        raise ConfigError("`identity.leeway_s` must be a whole number of seconds from 0 to 300", hint="e.g. 30")
    algorithms = data.get("algorithms", list(ALGORITHMS))
    if not isinstance(algorithms, list) or not algorithms or any(a not in ALGORITHMS for a in algorithms):
        raise ConfigError(
            f"`identity.algorithms` must list public-key algorithms among {', '.join(ALGORITHMS)}",
            hint="HS256 and none are never accepted: the server holds no shared secret.",
        )
    groups_claim = data.get("groups_claim", "groups")
    if not isinstance(groups_claim, str) or not groups_claim:
        raise ConfigError("`identity.groups_claim` must be a claim name", hint='e.g. "groups"')
    listed = data.get("rules", [])
    if not isinstance(listed, list) or not listed:
        raise ConfigError(
            "`identity` needs at least one [[identity.rules]] entry giving claims a role",
            hint='e.g. [[identity.rules]] group = "analysts", role = "analyst"',
        )
    rules = tuple(_rule(entry, number, roles) for number, entry in enumerate(listed, 1))
    return Identity(issuer, jwks_url, resource, rules, leeway, tuple(algorithms), groups_claim, introspection)


def _introspection(data: Any) -> Introspection:
    where = "identity.introspection"
    if not isinstance(data, dict):
        raise ConfigError(f"`{where}` must be a table", hint="write [identity.introspection] with url and client_id")
    unknown = sorted(set(data) - _INTROSPECTION_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown key `{where}.{unknown[0]}`", hint=f"expected one of: {', '.join(sorted(_INTROSPECTION_KEYS))}"
        )
    url = _url(data, "url", where)
    client_id = data.get("client_id")
    if not isinstance(client_id, str) or not client_id.strip() or ":" in client_id:
        raise ConfigError(
            f"`{where}.client_id` must be the client id the provider gave this server (no colon)",
            hint='e.g. client_id = "sophrosyne"',
        )
    secret_env = data.get("client_secret_env")
    if not isinstance(secret_env, str) or not _ENV_NAME.fullmatch(secret_env):
        raise ConfigError(
            f"`{where}.client_secret_env` must name the environment variable that holds the client secret",
            hint='e.g. client_secret_env = "SOPHROSYNE_INTROSPECTION_SECRET" (never the secret itself)',
        )
    secret = os.environ.get(secret_env, "")
    if not secret:
        raise ConfigError(
            f"the environment variable `{secret_env}` ({where}.client_secret_env) is not set or empty",
            hint="Set it to the client secret the identity provider gave this server before starting it.",
        )
    max_age = data.get("max_age_s", 60)
    if isinstance(max_age, bool) or not isinstance(max_age, int) or not 0 <= max_age <= 3600:
        raise ConfigError(
            f"`{where}.max_age_s` must be a whole number of seconds from 0 to 3600",
            hint="How long an answer is kept (never past the token's exp); 0 asks the provider on every request.",
        )
    return Introspection(url, client_id.strip(), secret_env, max_age, secret)


def _rule(entry: Any, number: int, roles: Mapping[str, Any]) -> ClaimRule:
    where = f"identity.rules #{number}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(entry) - _RULE_KEYS)
    if unknown:
        raise ConfigError(f"unknown key `{unknown[0]}` in {where}", hint=f"expected: {', '.join(sorted(_RULE_KEYS))}")
    role = entry.get("role")
    if not isinstance(role, str) or role not in roles:
        raise ConfigError(f"{where} names unknown role `{role}`", hint=f"The roles are {', '.join(sorted(roles))}.")
    given = [kind for kind in _MATCHES if kind in entry]
    if len(given) != 1 or not isinstance(entry[given[0]], str) or not entry[given[0]].strip():
        raise ConfigError(
            f"{where} must match exactly one of group, scope or email_domain, with a non-empty text",
            hint='e.g. email_domain = "example.com"',
        )
    return ClaimRule(role, given[0], entry[given[0]].strip())


def _url(data: Mapping[str, Any], key: str, where: str = "identity") -> str:
    value = data.get(key)
    hint = _URL_HINTS[f"{where}.{key}"]
    if not isinstance(value, str) or not value:
        raise ConfigError(f"`{where}.{key}` is missing", hint=hint)
    parts = urlsplit(value)
    local = parts.hostname in _LOCAL_HOSTS
    if (parts.scheme != "https" and not (parts.scheme == "http" and local)) or not parts.hostname:
        raise ConfigError(f"`{where}.{key}` must be an https URL (http only on this machine), not {value!r}", hint=hint)
    return value


_URL_HINTS = {
    "identity.issuer": 'the `iss` your provider writes in its tokens, e.g. "https://login.example.com/"',
    "identity.jwks_url": 'where the provider publishes its keys, e.g. "https://login.example.com/.well-known/jwks.json"'
    " (or give [identity.introspection] for opaque tokens)",
    "identity.resource": "this server's MCP URL, the tokens' audience, e.g. \"https://db.example.com/mcp\"",
    "identity.introspection.url": "the provider's token introspection endpoint (RFC 7662), "
    'e.g. "https://login.example.com/oauth2/introspect"',
}
