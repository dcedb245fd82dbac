"""Opaque tokens through token introspection (RFC 7662): the test identity provider (tests/fixtures/identity.py)
answers for the tokens it issued; an active one for this resource gets its claims' role over the MCP client,
inactive, expired, not-yet-valid, other-audience, no-audience and unknown ones are refused with their reason,
answers are kept no longer than `exp` and `max_age_s`, and an endpoint that cannot be asked refuses (fails
closed)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from fixtures.engines import build_sqlite
from fixtures.identity import RESOURCE, Provider, identity_provider
from serve.test_identity import expected_rows, refusal, rows_as
from sophrosyne.environment import Environment
from sophrosyne.errors import ConfigError
from sophrosyne.serve.introspection import Introspector
from sophrosyne.serve.refused import Refused
from sophrosyne.serve.server import build_server
from sophrosyne.settings import Settings
from sophrosyne.sql.policy import parse_policy

SECRET_ENV = "SOPHROSYNE_TEST_INTROSPECTION_SECRET"


def policy_text(provider: Provider, url: str, jwks: bool, max_age_s: int = 60) -> str:
    keys = f'jwks_url = "{provider.jwks_url}"' if jwks else ""
    return f"""
default_role = "clerk"

[roles.admin]

[roles.clerk]
deny = ["notes"]

[roles.clerk.tables.employees]
row_filter = "department = :claims.department"

[identity]
issuer = "{provider.issuer}"
resource = "{RESOURCE}"
leeway_s = 10
{keys}

[identity.introspection]
url = "{url}"
client_id = "{provider.client_id}"
client_secret_env = "{SECRET_ENV}"
max_age_s = {max_age_s}

[[identity.rules]]
scope = "db:admin"
role = "admin"

[[identity.rules]]
email_domain = "example.com"
role = "clerk"
"""


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with identity_provider() as made:
        os.environ[SECRET_ENV] = made.client_secret
        try:
            yield made
        finally:
            os.environ.pop(SECRET_ENV, None)


Serve = Callable[..., MCPServer]


@pytest.fixture(scope="module")
def serve(provider: Provider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    """A server behind the provider's introspection endpoint (or `url`), with JWKS too when `jwks`."""
    folder = tmp_path_factory.mktemp("introspection")
    database = build_sqlite(folder / "hr.sqlite")
    opened: list[Environment] = []

    def make(url: str | None = None, jwks: bool = False, max_age_s: int = 60) -> MCPServer:
        policy = folder / f"policy{len(opened)}.toml"
        policy.write_text(policy_text(provider, url or provider.introspection_url, jwks, max_age_s))
        settings = Settings.load(None, policy_file=policy, cache_dir=folder / "cache", directives="none")
        env = Environment.open(database, settings=settings, name="hr")
        opened.append(env)
        return build_server(env, require_token=True)

    make.database = database  # type: ignore[attr-defined]
    yield make
    for env in opened:
        env.close()


@pytest.fixture(scope="module")
def server(serve: Serve) -> MCPServer:
    return serve()


def test_an_active_opaque_token_gets_its_claims_role_and_rows(
    server: MCPServer, serve: Serve, provider: Provider
) -> None:
    token = provider.opaque_token(email="ada@example.com", department="D042", scope="db:read")
    rows = rows_as(server, token)
    assert rows == expected_rows(serve.database, "D042") and rows  # type: ignore[attr-defined]
    assert len(rows_as(server, provider.opaque_token(sub="user-root", scope="db:read db:admin"))) == 24


REFUSALS: dict[str, tuple[Callable[[Provider], str], int, str]] = {
    "inactive": (lambda p: p.opaque_token(active=False, email="a@example.com"), 401, "not active"),
    "never issued": (lambda p: "an-opaque-token-nobody-issued", 401, "not active"),
    "expired": (lambda p: p.opaque_token(email="a@example.com", exp=1_000_000), 401, "has expired"),
    "not yet valid": (lambda p: p.opaque_token(email="a@example.com", nbf=2_000_000_000), 401, "not valid yet"),
    "wrong audience": (lambda p: p.opaque_token(email="a@example.com", aud="http://127.0.0.1:9000/mcp"), 401, "for"),
    "no audience": (lambda p: p.opaque_token(email="a@example.com", aud=None), 401, "or for none"),
    "wrong issuer": (lambda p: p.opaque_token(email="a@example.com", iss="http://127.0.0.1:1/"), 401, "another"),
    "no subject": (lambda p: p.opaque_token(email="a@example.com", sub=None), 401, "names no subject"),
    "no matching role": (lambda p: p.opaque_token(email="mallory@elsewhere.org"), 403, "no rule"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_each_bad_opaque_token_is_refused_with_its_reason(server: MCPServer, provider: Provider, case: str) -> None:
    make, status, reason = REFUSALS[case]
    got, body, challenge = refusal(server, make(provider))
    assert got == status and reason in body["error_description"], body
    assert "resource_metadata=" in challenge


def test_an_unreachable_endpoint_refuses_every_token(serve: Serve, provider: Provider) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    for url in (f"http://127.0.0.1:{closed}/introspect", provider.issuer + "no-such-endpoint"):
        got, body, _ = refusal(serve(url=url), provider.opaque_token(email="a@example.com", department="D042"))
        assert got == 401 and "introspection endpoint could not be asked" in body["error_description"], body


def test_wrong_client_credentials_fail_closed(provider: Provider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, "not-the-secret")
    identity = parse_policy(_policy_data(provider)).identity
    assert identity is not None
    token = provider.opaque_token(email="a@example.com")
    with pytest.raises(Refused, match="could not be asked"):
        anyio.run(Introspector(identity).verify, token)


def test_answers_are_kept_until_exp_or_max_age_whichever_comes_first(provider: Provider) -> None:
    identity = parse_policy(_policy_data(provider, max_age_s=60)).identity
    assert identity is not None
    now = [1_900_000_000.0]
    checker = Introspector(identity, clock=lambda: now[0])
    soon = provider.opaque_token(email="a@example.com", iat=int(now[0]), exp=int(now[0]) + 20)
    later = provider.opaque_token(email="b@example.com", iat=int(now[0]), exp=int(now[0]) + 600)

    def ask(token: str) -> dict[str, Any]:
        return anyio.run(checker.verify, token)

    assert ask(soon)["email"] == "a@example.com" and ask(later)["email"] == "b@example.com"
    assert checker.asked == 2
    ask(soon), ask(later)
    assert checker.asked == 2  # both kept
    now[0] += 55  # past the first one's exp and leeway, within max_age: it is asked again, and is expired
    with pytest.raises(Refused, match="has expired"):
        ask(soon)
    ask(later)
    assert checker.asked == 3
    provider.opaque[later]["active"] = False  # revoked at the provider: seen once max_age_s has passed
    now[0] += 10
    with pytest.raises(Refused, match="not active"):
        ask(later)
    assert checker.asked == 4


def test_with_jwks_too_a_jwt_is_checked_offline_and_an_opaque_token_introspected(
    serve: Serve, provider: Provider
) -> None:
    server = serve(jwks=True)
    before = provider.introspections
    jwt_rows = rows_as(server, provider.token(email="ada@example.com", department="D017"))
    assert provider.introspections == before and jwt_rows == expected_rows(serve.database, "D017")  # type: ignore[attr-defined]
    assert rows_as(server, provider.opaque_token(email="ada@example.com", department="D017")) == jwt_rows
    assert provider.introspections == before + 1


def _policy_data(provider: Provider, max_age_s: int = 60, **introspection: Any) -> dict[str, Any]:
    return {
        "roles": {"r": {}},
        "identity": {
            "issuer": provider.issuer,
            "resource": RESOURCE,
            "introspection": {
                "url": provider.introspection_url,
                "client_id": provider.client_id,
                "client_secret_env": SECRET_ENV,
                "max_age_s": max_age_s,
                **introspection,
            },
            "rules": [{"email_domain": "example.com", "role": "r"}],
        },
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"client_secret_env": "SOPHROSYNE_TEST_NOT_SET_ANYWHERE"}, "is not set or empty"),
        ({"client_secret_env": "not a name"}, "must name the environment variable"),
        ({"client_id": ""}, "client_id"),
        ({"url": "http://idp.example.com/introspect"}, "must be an https URL"),
        ({"max_age_s": 86_400}, "from 0 to 3600"),
        ({"secret": "inline"}, "unknown key `identity.introspection.secret`"),
    ],
)
def test_a_wrong_introspection_section_is_refused_at_start(
    provider: Provider, change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_policy(_policy_data(provider, **change))


def test_the_secret_is_never_shown_in_the_identitys_repr(provider: Provider) -> None:
    identity = parse_policy(_policy_data(provider)).identity
    assert identity is not None and provider.client_secret not in repr(identity)


def test_without_jwks_a_jwt_is_introspected_too(server: MCPServer, provider: Provider) -> None:
    """No JWKS to check it offline: the provider decides, and it never issued this JWT as an opaque token."""
    before = provider.introspections
    got, body, _ = refusal(server, provider.token(email="a@example.com", department="D042"))
    assert got == 401 and "not active" in body["error_description"]
    assert provider.introspections == before + 1
