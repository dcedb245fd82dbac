"""What an MCP client needs to start or reach this server, in each client's own format: the database named
through the environment, every secret a reference to a variable or to the client's own secret store."""

from __future__ import annotations

import json
import re
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from sophrosyne.errors import ConfigError

# Options of `serve` whose value is a path: a client starts the server from another folder.
_PATH_OPTIONS = ("config", "descriptions", "policy", "audit_log")
DATABASE_VARIABLE = "SOPHROSYNE_DATABASE"
SOURCES_VARIABLE = "SOPHROSYNE_SOURCES"
PASSWORD_VARIABLE = "SOPHROSYNE_DATABASE_PASSWORD"
PASSWORD_FILE_VARIABLE = "SOPHROSYNE_DATABASE_PASSWORD_FILE"
TOKEN_VARIABLE = "SOPHROSYNE_TOKEN"
SERVER_NAME = "sophrosyne"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PASSWORD_KEYS = {"password", "passwd", "pwd"}


@dataclass(frozen=True)
class Secret:
    """An environment variable the client supplies by reference, never by value."""

    variable: str
    about: str


@dataclass(frozen=True)
class Launch:
    """How a client starts the server (stdio: a command and its environment) or reaches it (HTTP: a URL)."""

    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # plain values only: the database without its password
    secrets: tuple[Secret, ...] = ()
    url: str | None = None


def server_command(argv0: str | None = None) -> list[str]:
    """How this very program is started: its console script when run as one, else `python -m sophrosyne`."""
    script = Path(argv0 if argv0 is not None else sys.argv[0])
    if script.name == "sophrosyne" and script.exists():
        return [str(script.resolve())]
    return [sys.executable, "-m", "sophrosyne"]


def _authority(url: str) -> tuple[str, str, str]:
    """`scheme`, `user:password@host:port` and the rest of a URL, as text: `duckdb:///file` keeps its empty
    authority, which urlunsplit would drop."""
    scheme, _, rest = url.partition("://")
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    return scheme, rest[:cut], rest[cut:]


def without_password(url: str) -> tuple[str, bool]:
    """The URL with its password (in `user:password@` or a `password=` query) left out, and whether it had one."""
    if "://" not in url:
        return url, False
    scheme, netloc, tail = _authority(url)
    had = False
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        had = bool(colon)
        netloc = f"{user}@{hostport}" if user else hostport
    path, _, query_text = tail.partition("?")
    query_text, hash_, fragment = query_text.partition("#")
    query = parse_qsl(query_text, keep_blank_values=True)
    kept = [(key, value) for key, value in query if key.lower() not in _PASSWORD_KEYS]
    if len(kept) < len(query):
        had = True
        tail = path + (f"?{urlencode(kept)}" if kept else "") + hash_ + fragment
    return f"{scheme}://{netloc}{tail}", had


def with_password(url: str, environ: Mapping[str, str]) -> str:
    """A URL without a password given the one in SOPHROSYNE_DATABASE_PASSWORD, or in the file that
    SOPHROSYNE_DATABASE_PASSWORD_FILE names (the way a client's config references it)."""
    if urlsplit(url).password is not None:
        return url
    password = environ.get(PASSWORD_VARIABLE)
    file = environ.get(PASSWORD_FILE_VARIABLE)
    if password is None and file:
        try:
            password = Path(file).expanduser().read_text().rstrip("\r\n")
        except OSError as exc:
            raise ConfigError(
                f"{PASSWORD_FILE_VARIABLE} names `{file}`, which cannot be read: {exc.strerror}.",
                hint="Write the password alone into that file, readable by you only (chmod 600).",
            ) from None
    if not password:
        return url
    scheme, netloc, tail = _authority(url)
    user, _, hostport = netloc.rpartition("@")
    return f"{scheme}://{user}:{quote(password, safe='')}@{hostport}{tail}"


def stdio_launch(
    db: str | None,
    *,
    sources: Path | None = None,
    options: Mapping[str, str | Path | None] | None = None,
    allow_python: bool = False,
    environ: Mapping[str, str],
    argv0: str | None = None,
) -> Launch:
    """A client's way to start `serve` as it was asked: the database (or the sources file) in the environment,
    paths made absolute, and the password (or the sources file's `${VARIABLE}`s) as secrets by reference."""
    env: dict[str, str] = {}
    secrets: list[Secret] = []
    if sources is not None:
        path = Path(sources).expanduser().resolve()
        env[SOURCES_VARIABLE] = str(path)
        secrets += [Secret(name, f"`${{{name}}}` of {path.name}") for name in _variables_of(path)]
    else:
        target = db or environ.get(DATABASE_VARIABLE) or "demo"
        if "://" in target:
            target, had_password = without_password(target)
            if had_password or environ.get(PASSWORD_VARIABLE):
                secrets.append(Secret(PASSWORD_VARIABLE, "the database password"))
        elif target != "demo":
            target = str(Path(target).expanduser().resolve())
        env[DATABASE_VARIABLE] = target
    args = ["serve"]
    for name, value in (options or {}).items():
        if value is None:
            continue
        text = str(Path(value).expanduser().resolve()) if name in _PATH_OPTIONS else str(value)
        args += [f"--{name.replace('_', '-')}", text]
    if allow_python:
        args.append("--allow-python")
    return Launch(command=[*server_command(argv0), *args], env=env, secrets=tuple(secrets))


def http_launch(url: str, *, token: bool) -> Launch:
    """A client's way to reach a server over HTTP, with the bearer token by reference when a policy asks for one."""
    secrets = (
        (
            Secret(
                TOKEN_VARIABLE,
                "a bearer token whose sha256 the policy lists, or an access token of its identity provider",
            ),
        )
        if token
        else ()
    )
    return Launch(url=url, secrets=secrets)


def reachable_url(host: str, port: int) -> str:
    """The URL a client uses for a server bound to `host`: a wildcard address is not one to connect to, so the
    machine's own address stands in for it (found without sending anything: a UDP socket only picks a route)."""
    if host in ("0.0.0.0", "::", ""):
        host = _own_address(socket.AF_INET6 if host == "::" else socket.AF_INET)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/mcp"


def _own_address(family: socket.AddressFamily) -> str:
    probe = ("2001:db8::1", 9) if family == socket.AF_INET6 else ("192.0.2.1", 9)  # documentation ranges
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.connect(probe)
            return str(sock.getsockname()[0])
    except OSError:
        return socket.gethostname()


def _variables_of(path: Path) -> list[str]:
    """The `${VARIABLE}`s a sources file names (its URLs' secrets), in order, once each."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read the sources file `{path}`: {exc.strerror}.") from None
    return list(dict.fromkeys(_VARIABLE.findall(text)))


# -- one renderer per client, each after its documented format ---------------------------------------------


@dataclass(frozen=True)
class Snippet:
    """What to paste, where, and what to do beside it."""

    text: str
    where: str
    notes: tuple[str, ...] = ()


def _stdio_entry(launch: Launch, reference: Callable[[str], str]) -> dict[str, object]:
    env = dict(launch.env)
    env.update({secret.variable: reference(secret.variable) for secret in launch.secrets})
    return {"command": launch.command[0], "args": launch.command[1:], "env": env}


def _typed_entry(launch: Launch, reference: Callable[[str], str]) -> dict[str, object]:
    """An entry with its `type` (`stdio`, or `http` with the token's header), as Claude Code and VS Code read it."""
    if launch.url is None:
        return {"type": "stdio", **_stdio_entry(launch, reference)}
    entry: dict[str, object] = {"type": "http", "url": launch.url}
    if launch.secrets:
        entry["headers"] = _headers(launch, reference)
    return entry


def _headers(launch: Launch, reference: Callable[[str], str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {reference(TOKEN_VARIABLE)}"} if launch.secrets else {}


def _set(launch: Launch) -> tuple[str, ...]:
    return tuple(
        f"set {secret.variable} ({secret.about}) in the environment the client starts from."
        for secret in launch.secrets
    )


def claude_code(launch: Launch) -> Snippet:
    # Claude Code's project file `.mcp.json` (code.claude.com/docs/en/mcp, "Environment variable expansion in
    # .mcp.json"): `${VAR}` is expanded in command, args, env, url and headers; stdio entries take type, command,
    # args and env, HTTP entries type "http", url and headers.
    def reference(name: str) -> str:
        return f"${{{name}}}"

    entry = _typed_entry(launch, reference)
    text = json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2)
    return Snippet(text, "`.mcp.json` at the root of your project (Claude Code)", _set(launch))


def claude_desktop(launch: Launch) -> Snippet:
    # Claude Desktop's claude_desktop_config.json (modelcontextprotocol.io/quickstart/user): `mcpServers`, each
    # with command, args and env. It documents no variable expansion and no remote servers in this file, so the
    # password is read from a file the server is pointed at, never written here.
    if launch.url is not None:
        raise ConfigError(
            "Claude Desktop's config file starts local servers only.",
            hint="Serve over stdio for Claude Desktop (`sophrosyne config --client claude-desktop DB`).",
        )
    env = dict(launch.env)
    notes = []
    for secret in launch.secrets:
        if secret.variable == PASSWORD_VARIABLE:
            path = str(Path.home() / ".config" / "sophrosyne" / "database-password")
            env[PASSWORD_FILE_VARIABLE] = path
            notes.append(f"write the database password alone into {path}, readable only by you (chmod 600).")
        else:
            notes.append(
                f"Claude Desktop passes no variables of your shell: {secret.variable} ({secret.about}) must be set "
                "where Claude Desktop itself is started."
            )
    entry = {"command": launch.command[0], "args": launch.command[1:], "env": env}
    text = json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2)
    where = "claude_desktop_config.json (Claude Desktop: Settings > Developer > Edit Config)"
    return Snippet(text, where, tuple(notes))


def cursor(launch: Launch) -> Snippet:
    # Cursor's mcp.json (cursor.com/docs/mcp): `mcpServers`; stdio entries have command, args and env, remote ones
    # url and headers; `${env:NAME}` is interpolated in command, args, env, url and headers.
    def reference(name: str) -> str:
        return f"${{env:{name}}}"

    if launch.url is None:
        entry = _stdio_entry(launch, reference)
    else:
        entry = {"url": launch.url}
        if launch.secrets:
            entry["headers"] = _headers(launch, reference)
    text = json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2)
    return Snippet(text, "`.cursor/mcp.json` in your project, or `~/.cursor/mcp.json` for all projects", _set(launch))


def vscode(launch: Launch) -> Snippet:
    # VS Code's mcp.json (code.visualstudio.com/docs/copilot/reference/mcp-configuration): `servers` (not
    # mcpServers), stdio entries with type "stdio", command, args, env; HTTP entries type "http", url, headers;
    # secrets as `${input:ID}`, prompted once (`"password": true` hides the typing) and stored by VS Code.
    def reference(name: str) -> str:
        return f"${{input:{_input_id(name)}}}"

    inputs = [
        {"type": "promptString", "id": _input_id(s.variable), "description": f"Sophrosyne: {s.about}", "password": True}
        for s in launch.secrets
    ]
    entry = _typed_entry(launch, reference)
    config: dict[str, object] = {"servers": {SERVER_NAME: entry}}
    if inputs:
        config = {"inputs": inputs, **config}
    notes = ("VS Code asks for each secret when the server first starts, and keeps it.",) if inputs else ()
    return Snippet(json.dumps(config, indent=2), "`.vscode/mcp.json` in your workspace (VS Code)", notes)


def _input_id(variable: str) -> str:
    return variable.lower().replace("_", "-")


def opencode(launch: Launch) -> Snippet:
    # OpenCode's opencode.json (opencode.ai/docs/mcp-servers): `mcp`, local entries with type "local", command as
    # one list and environment; remote ones type "remote", url, headers; `{env:NAME}` is substituted in the
    # config's text (opencode.ai/docs/config, "Variables").
    def reference(name: str) -> str:
        return f"{{env:{name}}}"

    if launch.url is None:
        stdio = _stdio_entry(launch, reference)
        entry: dict[str, object] = {
            "type": "local",
            "command": launch.command,
            "enabled": True,
            "environment": stdio["env"],
        }
    else:
        entry = {"type": "remote", "url": launch.url, "enabled": True}
        if launch.secrets:
            entry["headers"] = _headers(launch, reference)
    config = {"$schema": "https://opencode.ai/config.json", "mcp": {SERVER_NAME: entry}}
    return Snippet(json.dumps(config, indent=2), "`opencode.json` in your project (OpenCode)", _set(launch))


def goose(launch: Launch) -> Snippet:
    # goose's config.yaml (block.github.io/goose/docs/guides/config-files, "Extensions Configuration"): under
    # `extensions`, a stdio entry has type, name, enabled, cmd, args, envs, env_keys and timeout; `env_keys` names
    # secrets goose takes from its keyring (`goose configure`) or the environment, never from the file.
    if launch.url is not None:
        if launch.secrets:
            raise ConfigError(
                "goose documents no way to take a header's secret from its keyring or the environment.",
                hint="Serve goose over stdio (`sophrosyne config --client goose DB`): the password stays a secret.",
            )
        entry: dict[str, object] = {
            "type": "streamable_http",
            "name": SERVER_NAME,
            "enabled": True,
            "uri": launch.url,
            "headers": {},
            "env_keys": [],
            "envs": {},
            "timeout": 300,
        }
    else:
        entry = {
            "type": "stdio",
            "name": SERVER_NAME,
            "enabled": True,
            "cmd": launch.command[0],
            "args": launch.command[1:],
            "envs": dict(launch.env),
            "env_keys": [secret.variable for secret in launch.secrets],
            "timeout": 300,
        }
    lines = ["extensions:", f"  {SERVER_NAME}:"]
    # JSON's scalars and flow collections are YAML too: each value written as JSON cannot be misread.
    lines += [f"    {key}: {json.dumps(value)}" for key, value in entry.items()]
    notes = tuple(
        f"store {secret.variable} ({secret.about}) with `goose configure`, or set it where goose starts."
        for secret in launch.secrets
    )
    return Snippet("\n".join(lines), "`~/.config/goose/config.yaml` (goose)", notes)


CLIENTS: dict[str, Callable[[Launch], Snippet]] = {
    "claude-code": claude_code,
    "claude-desktop": claude_desktop,
    "cursor": cursor,
    "vscode": vscode,
    "opencode": opencode,
    "goose": goose,
}


def snippet_for(client: str, launch: Launch) -> Snippet:
    render = CLIENTS.get(client)
    if render is None:
        raise ConfigError(f"no client `{client}`.", hint=f"Clients: {', '.join(CLIENTS)}.")
    return render(launch)
