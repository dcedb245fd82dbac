"""Behind an identity provider: a provider made here (keys per run, JWKS on 127.0.0.1) issues tokens; the MCP
client over streamable HTTP gets its claims' role and row filters, every forged or misdirected token is refused
with its reason, the resource metadata is RFC 9728's, and the audit names the caller."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp.types import ResourceTemplateReference

from fixtures.engines import build_sqlite
from fixtures.identity import RESOURCE, Provider, identity_provider
from sophrosyne.audit import summarize
from sophrosyne.environment import Environment
from sophrosyne.errors import AccessDenied, ConfigError
from sophrosyne.serve import oauth
from sophrosyne.serve.features import TEMPLATE
from sophrosyne.serve.server import build_server
from sophrosyne.settings import Settings
from sophrosyne.sql.policy import hash_token, parse_policy
from sophrosyne.sql.policy.claims import CLAIMS

STATIC = "static-admin-token-9d1e"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
TABLES = ResourceTemplateReference(type="ref/resource", uri=TEMPLATE)
ROWS = "SELECT employee_id, department FROM employees ORDER BY employee_id"


def policy_text(provider: Provider) -> str:
    return f"""
default_role = "clerk"

[roles.admin]

[roles.clerk]
deny = ["notes"]

[roles.clerk.tables.employees]
row_filter = "department = :claims.department"

[roles.clerk.tables.departments]
row_filter = "dept_code = :claims.department"

[identity]
issuer = "{provider.issuer}"
jwks_url = "{provider.jwks_url}"
resource = "{RESOURCE}"
leeway_s = 10

[[identity.rules]]
group = "hr-admins"
role = "admin"

[[identity.rules]]
email_domain = "example.com"
role = "clerk"

[tokens]
"{hash_token(STATIC)}" = "admin"
"""


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with identity_provider() as made:
        yield made


@pytest.fixture(scope="module")
def served(provider: Provider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MCPServer, Path, Path]]:
    folder = tmp_path_factory.mktemp("identity")
    (folder / "policy.toml").write_text(policy_text(provider))
    log = folder / "audit.jsonl"
    settings = Settings.load(
        None, audit_log=log, policy_file=folder / "policy.toml", cache_dir=folder / "cache", directives="none"
    )
    database = build_sqlite(folder / "hr.sqlite")
    env = Environment.open(database, settings=settings, name="hr")
    yield build_server(env, require_token=True), log, database
    env.close()


@contextlib.asynccontextmanager
async def over_http(server: MCPServer, token: str | None) -> AsyncIterator[tuple[httpx2.AsyncClient, Client | None]]:
    """The app served in this process: a plain HTTP client, and an MCP client session when the token is valid."""
    app = server.streamable_http_app()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        server.session_manager.run(),
        httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1:8000", headers=headers
        ) as http,
    ):
        if token is None:
            yield http, None
            return
        async with Client(streamable_http_client(f"{RESOURCE}", http_client=http)) as client:
            yield http, client


def rows_as(server: MCPServer, token: str, sql: str = ROWS) -> list[list[Any]]:
    async def run() -> list[list[Any]]:
        async with over_http(server, token) as (_, client):
            assert client is not None
            result = await client.call_tool("execute_sql", {"sql": sql})
            assert not result.is_error, result.content
            return (result.structured_content or {})["rows"]  # type: ignore[no-any-return]

    return anyio.run(run)


def refusal(server: MCPServer, token: str | None) -> tuple[int, dict[str, Any], str]:
    async def run() -> tuple[int, dict[str, Any], str]:
        async with over_http(server, None) as (http, _):
            headers = {"accept": "application/json, text/event-stream"}
            if token is not None:
                headers["authorization"] = f"Bearer {token}"
            answer = await http.post("/mcp", json=INITIALIZE, headers=headers)
            return answer.status_code, answer.json(), answer.headers.get("www-authenticate", "")

    return anyio.run(run)


def expected_rows(database: Path, department: str) -> list[list[Any]]:
    """The reduced copy's rows: the table as the department's own copy of the database would hold it."""
    with contextlib.closing(sqlite3.connect(database)) as conn:
        everything = conn.execute(ROWS).fetchall()
    return [list(row) for row in everything if row[1] == department]


def test_a_valid_token_gets_its_claims_role_and_rows_filtered_by_its_claim(
    served: tuple[MCPServer, Path, Path], provider: Provider
) -> None:
    server, log, database = served
    clerk = provider.token(email="ada@example.com", department="D042")
    rows = rows_as(server, clerk)
    assert rows == expected_rows(database, "D042") and rows
    other = rows_as(server, provider.token(sub="user-bo", email="bo@EXAMPLE.com", department="D017"))
    assert other == expected_rows(database, "D017") and other != rows
    # A group earlier in the rules wins: the admin reads every row.
    admin = provider.token(sub="user-root", email="root@example.com", groups=["hr-admins"])
    assert len(rows_as(server, admin)) == 24
    written = [json.loads(line) for line in log.read_text().splitlines()]
    calls = [r for r in written if r["tool"] == "execute_sql"]
    assert [(r["subject"], r["email"], r["role"]) for r in calls[-3:]] == [
        ("user-ada", "ada@example.com", "clerk"),
        ("user-bo", "bo@EXAMPLE.com", "clerk"),
        ("user-root", "root@example.com", "admin"),
    ]
    # The claim went to the driver: the executed text holds the placeholder, never the value.
    assert "D042" not in calls[-3]["sql_executed"] and ":sophrosyne_claim_department" in calls[-3]["sql_executed"]
    assert summarize(log, caller="ADA@example.com").calls == len([r for r in calls if r["subject"] == "user-ada"])
    assert summarize(log, caller="user-root").calls_per_role == {"admin": 1}


def test_a_claim_is_bound_as_a_value_never_read_as_sql(
    served: tuple[MCPServer, Path, Path], provider: Provider
) -> None:
    server, _, _ = served
    assert rows_as(server, provider.token(email="eve@example.com", department="D042' OR '1'='1")) == []


def test_a_static_token_still_works_and_is_audited_by_its_hash(
    served: tuple[MCPServer, Path, Path], provider: Provider
) -> None:
    server, log, _ = served
    assert len(rows_as(server, STATIC)) == 24
    last = json.loads(log.read_text().splitlines()[-1])
    assert last["subject"] == "token:" + hash_token(STATIC)[:16] and last["email"] is None


REFUSALS: dict[str, tuple[Callable[[Provider], str], int, str]] = {
    "expired": (lambda p: p.token(email="a@example.com", department="D042", exp=1_000_000), 401, "has expired"),
    "not yet valid": (lambda p: p.token(email="a@example.com", nbf=2_000_000_000), 401, "not valid yet"),
    "wrong audience": (lambda p: p.token(email="a@example.com", aud="sophrosyne"), 401, "another resource"),
    "another resource": (
        lambda p: p.token(email="a@example.com", aud="http://127.0.0.1:9000/mcp"),
        401,
        "another resource",
    ),
    "wrong issuer": (lambda p: p.token(email="a@example.com", iss="http://127.0.0.1:1/"), 401, "another issuer"),
    "unknown key id": (lambda p: p.token(kid="k9", key=p.keys["k2"], email="a@example.com"), 401, "does not publish"),
    "alg none": (lambda p: p.unsigned(email="a@example.com"), 401, "algorithm `none` is not accepted"),
    "HS256 with the public key": (lambda p: p.hs256_with_public_key(email="a@example.com"), 401, "`HS256` is not"),
    "tampered payload": (lambda p: p.tampered(groups=["hr-admins"]), 401, "signature does not verify"),
    "signed by another key": (lambda p: p.token(key=p.stranger, email="a@example.com"), 401, "signature does not"),
    "no matching role": (lambda p: p.token(email="mallory@elsewhere.org"), 403, "no rule of the server's policy"),
    "unverified email": (lambda p: p.token(email="a@example.com", email_verified=False), 403, "no rule"),
    "no subject": (lambda p: p.token(email="a@example.com", sub=None), 401, "lacks a required claim"),
    "not a token": (lambda p: "not-a-jwt", 401, "not a signed JWT"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_each_bad_token_is_refused_with_its_reason(
    served: tuple[MCPServer, Path, Path], provider: Provider, case: str
) -> None:
    make, status, reason = REFUSALS[case]
    server, _, _ = served
    got, body, challenge = refusal(server, make(provider))
    assert got == status and reason in body["error_description"], body
    assert body["error"] == ("invalid_token" if status == 401 else "insufficient_scope")
    assert 'resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"' in challenge


def test_no_token_is_pointed_to_the_resource_metadata(served: tuple[MCPServer, Path, Path]) -> None:
    status, body, challenge = refusal(served[0], None)
    assert status == 401 and body["error"] == "token_required"
    assert challenge.startswith("Bearer ") and "resource_metadata=" in challenge and "error=" not in challenge


def test_the_resource_metadata_has_rfc_9728s_fields(served: tuple[MCPServer, Path, Path], provider: Provider) -> None:
    async def run() -> list[dict[str, Any]]:
        async with over_http(served[0], None) as (http, _):
            paths = ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource")
            return [(await http.get(path)).json() for path in paths]

    for metadata in anyio.run(run):
        # RFC 9728 section 2: `resource` is required and is the resource's identifier; the rest are optional,
        # and typed: a list of issuer URLs, a list of bearer methods.
        assert metadata["resource"] == RESOURCE
        assert metadata["authorization_servers"] == [provider.issuer]
        assert metadata["bearer_methods_supported"] == ["header"]
        assert all(isinstance(v, str | list) for v in metadata.values())


def test_a_rotated_key_is_fetched_and_an_unknown_one_is_not_fetched_over_and_over(
    served: tuple[MCPServer, Path, Path], provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _, database = served
    monkeypatch.setattr(oauth, "JWKS_RETRY_S", 0.0)
    provider.published = ["k1", "k2"]  # the provider rotates: a new key beside the old one
    try:
        rows = rows_as(server, provider.token(kid="k2", email="a@example.com", department="D063"))
        assert rows == expected_rows(database, "D063")
        monkeypatch.setattr(oauth, "JWKS_RETRY_S", 3600.0)
        before = provider.fetches
        for _ in range(3):
            assert refusal(server, provider.token(kid="k7", key=provider.keys["k2"]))[0] == 401
        assert provider.fetches == before  # a made-up key id does not make the server read the keys each time
    finally:
        provider.published = ["k1"]


def test_a_role_reading_claims_refuses_a_call_without_claims(served: tuple[MCPServer, Path, Path]) -> None:
    database = served[2]
    settings = Settings.load(None, directives="none")
    env = Environment.open(database, settings=settings)
    try:
        policy = parse_policy(
            {"roles": {"clerk": {"tables": {"employees": {"row_filter": "department = :claims.department"}}}}}
        )
        clerk = env.for_role(policy.role("clerk"))
        with pytest.raises(AccessDenied, match="carries none"):
            clerk.secure.run(ROWS, limit=100)
        mark = CLAIMS.set({"email": "a@example.com"})
        try:
            with pytest.raises(AccessDenied, match="no usable `department` claim"):
                clerk.secure.run(ROWS, limit=100)
        finally:
            CLAIMS.reset(mark)
        with pytest.raises(Exception, match="placeholder kept for the policy's claims"):
            clerk.secure.run("SELECT :sophrosyne_claim_department", limit=1)
    finally:
        env.close()


POLICY_ERRORS: dict[str, tuple[dict[str, Any], str]] = {
    "a static token for a role reading claims": (
        {"roles": {"r": {"tables": {"t": {"row_filter": "a = :claims.email"}}}}, "tokens": {"0" * 64: "r"}},
        "static token has none",
    ),
    "a bad claim name": (
        {"roles": {"r": {"tables": {"t": {"row_filter": "a = :claims.E-mail"}}}}},
        "is not a claim name",
    ),
    "a rule for an unknown role": (
        {
            "roles": {"r": {}},
            "identity": {
                "issuer": "https://i.example/",
                "jwks_url": "https://i.example/k",
                "resource": "https://s.example/mcp",
                "rules": [{"group": "g", "role": "nobody"}],
            },
        },
        "unknown role `nobody`",
    ),
    "a symmetric algorithm": (
        {
            "roles": {"r": {}},
            "identity": {
                "issuer": "https://i.example/",
                "jwks_url": "https://i.example/k",
                "resource": "https://s.example/mcp",
                "algorithms": ["HS256"],
                "rules": [{"group": "g", "role": "r"}],
            },
        },
        "public-key algorithms",
    ),
    "no rules": (
        {
            "roles": {"r": {}},
            "identity": {
                "issuer": "https://i.example/",
                "jwks_url": "https://i.example/k",
                "resource": "https://s/mcp",
            },
        },
        "at least one",
    ),
    "a plain http issuer elsewhere": (
        {
            "roles": {"r": {}},
            "identity": {
                "issuer": "http://i.example/",
                "jwks_url": "https://i.example/k",
                "resource": "https://s.example/mcp",
                "rules": [{"group": "g", "role": "r"}],
            },
        },
        "must be an https URL",
    ),
    "a rule matching two things": (
        {
            "roles": {"r": {}},
            "identity": {
                "issuer": "https://i.example/",
                "jwks_url": "https://i.example/k",
                "resource": "https://s.example/mcp",
                "rules": [{"group": "g", "scope": "s", "role": "r"}],
            },
        },
        "exactly one of",
    ),
}


@pytest.mark.parametrize("case", list(POLICY_ERRORS))
def test_a_wrong_identity_policy_is_refused_at_start(case: str) -> None:
    data, message = POLICY_ERRORS[case]
    with pytest.raises(ConfigError, match=message):
        parse_policy(data)


def test_resources_prompts_and_completions_name_the_caller(
    served: tuple[MCPServer, Path, Path], provider: Provider
) -> None:
    server, log, _ = served
    before = len(log.read_text().splitlines()) if log.exists() else 0
    token = provider.token(sub="user-cy", email="cy@example.com", department="D042")

    async def run() -> None:
        async with over_http(server, token) as (_, client):
            assert client is not None
            await client.list_resources()
            await client.get_prompt("explore", {"question": "Who was absent?"})
            await client.complete(TABLES, {"name": "table", "value": "e"})

    anyio.run(run)
    written = [json.loads(line) for line in log.read_text().splitlines()[before:]]
    assert [r["tool"] for r in written] == ["resources/list", "prompts/get", "completion/complete"]
    assert all((r["subject"], r["email"], r["role"]) == ("user-cy", "cy@example.com", "clerk") for r in written)
