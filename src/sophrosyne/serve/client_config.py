"""The configuration an MCP client needs to start or reach a server exactly as it was started."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

# Options of `serve` whose value is a path: a client starts the server from another folder.
_PATH_OPTIONS = ("sources", "config", "descriptions", "policy", "audit_log")
TOKEN_VARIABLE = "SOPHROSYNE_TOKEN"


def server_command(argv0: str | None = None) -> list[str]:
    """How this very program is started: its console script when run as one, else `python -m sophrosyne`."""
    script = Path(argv0 if argv0 is not None else sys.argv[0])
    if script.name == "sophrosyne" and script.exists():
        return [str(script.resolve())]
    return [sys.executable, "-m", "sophrosyne"]


def serve_arguments(
    db: str | None,
    options: dict[str, str | Path | None],
    *,
    demo: str = "demo",
) -> list[str]:
    """`serve` and its arguments as given, with paths made absolute (the demo database stays `demo`)."""
    args = ["serve"]
    if db is not None:
        args.append(db if "://" in db or db == demo else str(Path(db).expanduser().resolve()))
    for name, value in options.items():
        if value is None:
            continue
        text = str(Path(value).expanduser().resolve()) if name in _PATH_OPTIONS else str(value)
        args += [f"--{name.replace('_', '-')}", text]
    return args


def client_configuration(
    command: list[str], args: list[str], *, http_url: str | None = None, token: bool = False
) -> str:
    """Lines for a person to paste: a Claude Code command and the `mcpServers` JSON most clients read."""
    if http_url is None:
        entry: dict[str, object] = {"command": command[0], "args": [*command[1:], *args]}
        claude = f"claude mcp add sophrosyne -- {shlex.join([*command, *args])}"
    else:
        entry = {"type": "http", "url": http_url}
        claude = f"claude mcp add --transport http sophrosyne {http_url}"
        if token:
            # The token itself is never printed: the client reads it from the person's environment.
            entry["headers"] = {"Authorization": f"Bearer ${{{TOKEN_VARIABLE}}}"}
            claude += f' --header "Authorization: Bearer ${TOKEN_VARIABLE}"'
    config = json.dumps({"mcpServers": {"sophrosyne": entry}})
    lines = ["client configuration (Claude Code, then the mcpServers JSON of Cursor and others):", claude, config]
    if token:
        lines.append(
            f"set {TOKEN_VARIABLE} to a bearer token whose sha256 the policy lists, or an access token of the "
            "policy's identity provider (an OAuth client finds the provider itself: docs/identity.md)."
        )
    return "\n".join(lines)
