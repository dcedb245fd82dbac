"""`sophrosyne serve` prints the exact client configuration for the way it was started, and it works."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from sophrosyne.serve.client_config import client_configuration, serve_arguments

ROOT = Path(__file__).resolve().parents[2]


def printed_configuration(*args: str, cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "sophrosyne", "serve", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = next(line for line in done.stderr.splitlines() if line.startswith('{"mcpServers"'))
    servers = json.loads(line)["mcpServers"]
    assert isinstance(servers, dict)
    return dict(servers["sophrosyne"])


def test_the_printed_stdio_configuration_starts_the_same_server(tmp_path: Path) -> None:
    # Started from another folder with a relative path: the configuration holds it made absolute.
    db = tmp_path / "copy.sqlite"
    db.write_bytes((ROOT / "src" / "sophrosyne" / "data" / "demo.sqlite").read_bytes())
    entry = printed_configuration("copy.sqlite", "--directives", "none", cwd=tmp_path)
    args = [str(a) for a in entry["args"]]  # type: ignore[attr-defined]
    assert str(db.resolve()) in args and args[-2:] == ["--directives", "none"]

    async def tools() -> list[str]:
        async with Client(StdioServerParameters(command=str(entry["command"]), args=args, cwd="/")) as client:
            return [t.name for t in (await client.list_tools()).tools]

    assert "execute_sql" in anyio.run(tools)


def test_http_with_a_policy_shows_how_to_send_the_bearer_token() -> None:
    text = client_configuration(["sophrosyne"], ["serve"], http_url="http://127.0.0.1:8000/mcp", token=True)
    claude, config = text.splitlines()[1:3]
    assert claude.endswith('--header "Authorization: Bearer $SOPHROSYNE_TOKEN"')
    entry = json.loads(config)["mcpServers"]["sophrosyne"]
    assert entry == {
        "type": "http",
        "url": "http://127.0.0.1:8000/mcp",
        "headers": {"Authorization": "Bearer ${SOPHROSYNE_TOKEN}"},
    }


def test_paths_become_absolute_and_urls_and_demo_stay(tmp_path: Path) -> None:
    url = "postgresql://agent@db/shop"
    assert serve_arguments(url, {"policy": "p.toml", "role": "ops"})[1:4] == [
        url,
        "--policy",
        str(Path("p.toml").resolve()),
    ]
    assert serve_arguments("demo", {})[1] == "demo"
    assert serve_arguments(None, {"sources": "s.toml"}) == ["serve", "--sources", str(Path("s.toml").resolve())]
