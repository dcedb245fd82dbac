"""`sophrosyne config --client NAME` (and `serve` on start) writes each client's documented format: the
database the user gave named through the environment, every secret a reference, never its value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mcp import Client, StdioServerParameters

from sophrosyne.errors import ConfigError
from sophrosyne.serve.client_config import (
    CLIENTS,
    http_launch,
    reachable_url,
    snippet_for,
    stdio_launch,
    with_password,
    without_password,
)

ROOT = Path(__file__).resolve().parents[2]
SECRET = "S3cret-p@ss"
URL = "postgresql://agent:S3cret-p%40ss@db.internal:5432/shop"


def config(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sophrosyne", "config", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def config_here(*args: str) -> Any:
    """`sophrosyne config ARGS` in this process, through the app the console script calls: the same output at
    none of a process's 0.6 CPU-s of imports (the command as a process is run by the stdio test below)."""
    from typer.testing import CliRunner

    from sophrosyne.cli.app import app

    return CliRunner().invoke(app, ["config", *args])


# Each client's documented shape (see the comment on its renderer in serve/client_config.py): where the servers
# sit, the keys an entry must have and may have, and where the environment goes.
STDIO = {"type", "command", "args", "env"}
OPENCODE = {"type", "command", "enabled", "environment"}
SCHEMAS: dict[str, dict[str, Any]] = {
    "claude-code": {
        "top": "mcpServers",
        "required": {"type", "command"},
        "allowed": {"type", "command", "args", "env"},
    },
    "claude-desktop": {"top": "mcpServers", "required": {"command"}, "allowed": {"command", "args", "env"}},
    "cursor": {"top": "mcpServers", "required": {"command"}, "allowed": {"command", "args", "env"}},
    "vscode": {"top": "servers", "required": {"type", "command"}, "allowed": STDIO},
    "opencode": {
        "top": "mcp",
        "required": {"type", "command"},
        "allowed": {"type", "command", "enabled", "environment"},
    },
    "goose": {
        "top": "extensions",
        "required": {"type", "name", "cmd", "enabled"},
        "allowed": {"type", "name", "enabled", "cmd", "args", "envs", "env_keys", "timeout"},
    },
}
ENV_KEY = {"opencode": "environment", "goose": "envs"}


def parsed(client: str, text: str) -> dict[str, Any]:
    data = yaml.safe_load(text) if client == "goose" else json.loads(text)
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("client", list(CLIENTS))
def test_each_client_gets_its_documented_format_naming_the_database_without_its_password(client: str) -> None:
    done = config_here("--client", client, URL, "--role", "ops")
    assert done.exit_code == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr and "S3cret" not in done.stdout + done.stderr
    data = parsed(client, done.stdout)
    schema = SCHEMAS[client]
    entry = data[schema["top"]]["sophrosyne"]
    assert schema["required"] <= set(entry) <= schema["allowed"], sorted(entry)
    env = entry[ENV_KEY.get(client, "env")]
    # The database the user gave, through the environment; the password left to a reference.
    assert env["SOPHROSYNE_DATABASE"] == "postgresql://agent@db.internal:5432/shop"
    command = entry["command"] if client == "opencode" else [entry.get("command", entry.get("cmd")), *entry["args"]]
    assert command[-3:] == ["serve", "--role", "ops"] and not any("postgresql" in str(a) for a in command)
    reference = {
        "claude-code": "${SOPHROSYNE_DATABASE_PASSWORD}",
        "cursor": "${env:SOPHROSYNE_DATABASE_PASSWORD}",
        "vscode": "${input:sophrosyne-database-password}",
        "opencode": "{env:SOPHROSYNE_DATABASE_PASSWORD}",
    }
    if client in reference:
        assert env["SOPHROSYNE_DATABASE_PASSWORD"] == reference[client]
    if client == "vscode":
        assert data["inputs"] == [
            {
                "type": "promptString",
                "id": "sophrosyne-database-password",
                "description": "Sophrosyne: the database password",
                "password": True,
            }
        ]
    if client == "goose":
        assert entry["env_keys"] == ["SOPHROSYNE_DATABASE_PASSWORD"] and "SOPHROSYNE_DATABASE_PASSWORD" not in env
    if client == "claude-desktop":  # no variables expanded: the password is read from a file
        assert set(env) == {"SOPHROSYNE_DATABASE", "SOPHROSYNE_DATABASE_PASSWORD_FILE"}


@pytest.mark.parametrize("client", [c for c in CLIENTS if c not in ("claude-desktop", "goose")])
def test_over_http_the_token_is_a_reference_in_the_header(client: str) -> None:
    text = snippet_for(client, http_launch("http://10.0.0.5:8000/mcp", token=True)).text
    data = parsed(client, text)
    entry = data[SCHEMAS[client]["top"]]["sophrosyne"]
    assert entry["url"] == "http://10.0.0.5:8000/mcp"
    header = entry["headers"]["Authorization"]
    assert header.startswith("Bearer ") and "SOPHROSYNE_TOKEN" in header.upper().replace("-", "_")
    assert {"claude-code": "http", "vscode": "http", "opencode": "remote"}.get(client) == entry.get("type")


def test_clients_without_a_documented_secret_header_refuse_rather_than_leak() -> None:
    for client in ("claude-desktop", "goose"):
        with pytest.raises(ConfigError):
            snippet_for(client, http_launch("http://10.0.0.5:8000/mcp", token=True))
    goose = parsed("goose", snippet_for("goose", http_launch("http://10.0.0.5:8000/mcp", token=False)).text)
    assert goose["extensions"]["sophrosyne"]["uri"] == "http://10.0.0.5:8000/mcp"


def test_the_database_from_the_environment_is_kept_and_a_sources_files_variables_are_references(
    tmp_path: Path,
) -> None:
    launch = stdio_launch(None, environ={"SOPHROSYNE_DATABASE": URL})
    assert launch.env == {"SOPHROSYNE_DATABASE": "postgresql://agent@db.internal:5432/shop"}
    sources = tmp_path / "sources.toml"
    sources.write_text('[sources.shop]\nurl = "postgresql://agent:${SHOP_PASSWORD}@db/shop"\n')
    launch = stdio_launch(None, sources=sources, environ={})
    assert launch.env == {"SOPHROSYNE_SOURCES": str(sources.resolve())}
    entry = json.loads(snippet_for("cursor", launch).text)["mcpServers"]["sophrosyne"]
    assert entry["env"]["SHOP_PASSWORD"] == "${env:SHOP_PASSWORD}"


def test_passwords_leave_the_url_and_come_back_from_the_environment() -> None:
    assert without_password(URL) == ("postgresql://agent@db.internal:5432/shop", True)
    assert without_password("mysql+pymysql://root@127.0.0.1/test?password=x&charset=utf8") == (
        "mysql+pymysql://root@127.0.0.1/test?charset=utf8",
        True,
    )
    assert without_password("duckdb:///data/x.duckdb") == ("duckdb:///data/x.duckdb", False)
    environ = {"SOPHROSYNE_DATABASE_PASSWORD": SECRET}
    assert with_password("postgresql://agent@db.internal:5432/shop", environ) == URL  # `@` quoted
    assert with_password(URL, {"SOPHROSYNE_DATABASE_PASSWORD": "other"}) == URL  # a password given wins
    assert with_password("duckdb:///data/x.duckdb", {}) == "duckdb:///data/x.duckdb"


def test_a_wildcard_host_is_replaced_by_an_address_a_client_can_use() -> None:
    assert reachable_url("127.0.0.1", 8000) == "http://127.0.0.1:8000/mcp"
    url = reachable_url("0.0.0.0", 8000)
    assert "0.0.0.0" not in url and url.endswith(":8000/mcp")
    assert reachable_url("::1", 8000) == "http://[::1]:8000/mcp"


def test_the_printed_stdio_configuration_starts_the_same_server(tmp_path: Path) -> None:
    # Asked from another folder with a relative path: the configuration holds it made absolute, in the env.
    db = tmp_path / "copy.sqlite"
    db.write_bytes((ROOT / "src" / "sophrosyne" / "data" / "demo.sqlite").read_bytes())
    done = config("--client", "claude-code", "copy.sqlite", "--directives", "none", cwd=tmp_path)
    entry = json.loads(done.stdout)["mcpServers"]["sophrosyne"]
    assert entry["env"] == {"SOPHROSYNE_DATABASE": str(db.resolve())}
    assert entry["args"][-2:] == ["--directives", "none"]

    async def tables() -> str:
        env = {"PATH": os.environ.get("PATH", ""), **entry["env"]}
        server = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd="/")
        async with Client(server) as client:
            result = await client.call_tool("list_sources", {})
            return str(result.content[0].text)  # type: ignore[union-attr]

    assert "copy" in anyio.run(tables)


def test_an_unknown_client_is_a_usage_error_naming_the_clients() -> None:
    done = config_here("--client", "emacs", "demo")
    assert done.exit_code != 0 and "claude-desktop" in done.stderr


def test_a_busy_port_is_one_line_with_a_hint_and_no_configuration() -> None:
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "sophrosyne", "serve", "demo", "--http", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert f"error: port {port} on 127.0.0.1 is in use by another program." in done.stderr
    assert "hint: Pass another --port" in done.stderr
    assert "Errno" not in done.stderr and "mcpServers" not in done.stderr  # nothing to paste for a server not running


def test_serve_prints_the_database_of_its_environment_without_the_password() -> None:
    # Issue 37, items 1-2: the database given in SOPHROSYNE_DATABASE reaches the printed configuration (through
    # env), and its password does not (it was printed in clear); a client gone at once still had it said.
    env = {**os.environ, "SOPHROSYNE_DATABASE": "postgresql://postgres:S3cret@127.0.0.1:1/test"}
    done = subprocess.run(
        [sys.executable, "-m", "sophrosyne", "serve"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "S3cret" not in done.stdout + done.stderr
    printed = json.loads(done.stderr[done.stderr.index("{") : done.stderr.rindex("}") + 1])
    assert printed["mcpServers"]["sophrosyne"]["env"] == {
        "SOPHROSYNE_DATABASE": "postgresql://postgres@127.0.0.1:1/test",
        "SOPHROSYNE_DATABASE_PASSWORD": "${SOPHROSYNE_DATABASE_PASSWORD}",
    }
