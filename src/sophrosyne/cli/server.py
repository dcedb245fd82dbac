"""`sophrosyne serve`: the MCP server over stdio or HTTP, with the client configuration printed on start."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sophrosyne.cli.targets import (
    DB_HELP,
    ConfigOption,
    DescriptionsOption,
    DirectivesOption,
    PolicyOption,
    RoleOption,
    resolve_db,
    say_when_the_demo_is_served,
)
from sophrosyne.cli.terminal import console, current_log_level, err_console, reported
from sophrosyne.errors import ConfigError

if TYPE_CHECKING:
    from sophrosyne.serve.client_config import Launch


def serve(
    db: Annotated[str | None, typer.Argument(help=DB_HELP, show_default=False)] = None,
    sources: Annotated[
        Path | None,
        typer.Option("--sources", help="TOML file of several databases (name, path or url, description, policy)."),
    ] = None,
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
    workers: Annotated[
        int, typer.Option(help="HTTP worker processes (stateless HTTP lets each serve any request).", min=1)
    ] = 1,
    descriptions: DescriptionsOption = None,
    directives: DirectivesOption = None,
    audit_log: Annotated[
        Path | None,
        typer.Option(
            help="Append one JSONL audit record per tool call, resource list or read, prompt and completion here "
            "(e.g. --audit-log audit.jsonl)."
        ),
    ] = None,
    allow_python: Annotated[
        bool,
        typer.Option(
            "--allow-python",
            help="Also offer run_python: sandboxed Python programs whose sql() runs as the caller's role.",
        ),
    ] = False,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
) -> None:
    """Serve databases to agents over MCP (stdio by default, or streamable HTTP).

    Example: sophrosyne serve demo            (stdio, for Claude Code, Cursor, OpenCode)
    Example: sophrosyne serve my.db --http --port 8000 --policy policy.toml --workers 2
    Example: sophrosyne serve --sources sources.toml --http
    Example: sophrosyne serve demo --allow-python   (adds run_python, a sandboxed Python tool)

    Over stdio the role comes from --role; over HTTP with a policy, each request's bearer token names it.
    On start, the exact client configuration for this way of serving is printed on stderr.
    """
    import os
    import sys

    from sophrosyne.base.parent import STARTED_BY
    from sophrosyne.serve.handshake import EarlyStdio, snapshot_path

    # Over stdio the handshake is answered at once, before the heavy imports below (see handshake.py).
    early = None if http else EarlyStdio(snapshot_path(sys.argv[1:]), parent=STARTED_BY)
    from sophrosyne.serve.spec import ServeSpec, collect_less_often

    collect_less_often()

    with reported():
        if workers > 1 and not http:
            raise ConfigError("--workers needs --http.", hint="Over stdio the agent starts one server itself.")
        if sources is None and db is None and os.environ.get("SOPHROSYNE_SOURCES"):
            sources = Path(os.environ["SOPHROSYNE_SOURCES"])  # keeps the sources' location off the command line
        if sources is not None and db is not None:
            raise ConfigError("give a database or --sources, not both.", hint="Add the database to the sources file.")
        say_when_the_demo_is_served(db, sources)
        spec = ServeSpec(
            db=None if sources is not None else resolve_db(db),
            sources=sources,
            host=host,
            port=port,
            config=config,
            descriptions=descriptions,
            policy=policy,
            role=role,
            directives=directives,
            audit_log=audit_log,
            allow_python=allow_python,
        )
        # The server answers at once; each schema is read in the background (a bad target is told on each call).
        opened = spec.open()
        spec.drain_s = opened.settings.limits.timeout_s + 1
        for env in opened.environments.values():
            # In one process the schema is read and the directive indexes loaded from now on, while the MCP SDK
            # is imported below (the handshake was answered early, over stdio); HTTP workers warm their own.
            if workers <= 1:
                env.warm()
            else:
                env.start_reading()
        if allow_python:
            from sophrosyne.sandbox.executor import check_sandbox

            check_sandbox(opened.settings)  # refuse to start rather than offer Python less isolated
        for name, env in opened.environments.items():
            err_console.print(f"{name}: {env.dialect} at {env.url}", highlight=False, markup=False, soft_wrap=True)
        token = http and any(env.policy is not None for env in opened.environments.values())
        options = {"config": config, "descriptions": descriptions, "policy": policy, "role": role}
        options |= {"directives": directives, "audit_log": audit_log}

        def tell_clients() -> None:
            # Over HTTP only once the port is bound: a configuration for a server that failed to start misleads.
            from sophrosyne.serve.client_config import http_launch, reachable_url, stdio_launch

            if http:
                launch = http_launch(reachable_url(host, port), token=token)
            else:
                launch = stdio_launch(
                    db, sources=sources, options=options, allow_python=allow_python, environ=os.environ
                )
            print_client_configuration("claude-code", launch, serving=True)

        if early is not None:
            tell_clients()  # before the SDK's import: a client that left at once still had it said
            early.told()
        from sophrosyne.serve.run import serve as run_server
        from sophrosyne.serve.run import serve_workers

        if workers > 1:
            opened.close()
            serve_workers(spec, workers, on_bound=tell_clients)
        else:
            run_server(
                opened,
                http=http,
                host=host,
                port=port,
                log_level=current_log_level(),
                early=early,
                allow_python=allow_python,
                on_bound=tell_clients,
            )
            from sophrosyne.serve.handshake import leave_now

            leave_now()  # the client has gone (or SIGTERM's calls have finished): nothing is left to free


def print_client_configuration(client: str, launch: Launch, *, serving: bool = False) -> None:
    """The snippet on stdout for `config` (to redirect into a file), on stderr for `serve` (stdout is the wire)."""
    from sophrosyne.serve.client_config import CLIENTS, snippet_for

    snippet = snippet_for(client, launch)
    err_console.print(
        f"# client configuration: paste into {snippet.where}", highlight=False, markup=False, soft_wrap=True
    )
    out = err_console if serving else console
    out.print(snippet.text, highlight=False, markup=False, soft_wrap=True)
    for note in snippet.notes:
        err_console.print(f"# {note}", highlight=False, markup=False, soft_wrap=True)
    if serving:
        others = "|".join(name for name in CLIENTS if name != client)
        err_console.print(
            f"# other clients: sophrosyne config --client {others}, with the arguments given to serve",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def config(
    client: Annotated[
        str,
        typer.Option(
            "--client",
            help="The MCP client: claude-code, claude-desktop, cursor, vscode, opencode or goose.",
            show_default=False,
        ),
    ],
    db: Annotated[str | None, typer.Argument(help=DB_HELP, show_default=False)] = None,
    sources: Annotated[
        Path | None, typer.Option("--sources", help="TOML file of several databases, as `serve --sources` takes it.")
    ] = None,
    url: Annotated[
        str | None,
        typer.Option("--url", help="Reach a server already serving HTTP at this URL (…/mcp) instead of starting one."),
    ] = None,
    token: Annotated[
        bool, typer.Option("--token", help="With --url: the server has a policy, so send SOPHROSYNE_TOKEN as bearer.")
    ] = False,
    descriptions: DescriptionsOption = None,
    directives: DirectivesOption = None,
    audit_log: Annotated[Path | None, typer.Option(help="Append one JSONL audit record per tool call here.")] = None,
    allow_python: Annotated[bool, typer.Option("--allow-python", help="Also offer run_python.")] = False,
    settings: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
) -> None:
    """Print the configuration an MCP client needs to start this server (or reach it over HTTP).

    Example: sophrosyne config --client claude-code postgresql://agent@db.internal/shop
    Example: sophrosyne config --client vscode --sources sources.toml
    Example: sophrosyne config --client cursor --url http://10.0.0.5:8000/mcp --token

    The database goes to the client as SOPHROSYNE_DATABASE; a password in its URL is left out and referenced as
    SOPHROSYNE_DATABASE_PASSWORD (or a sources file's ${VARIABLE}s, or the bearer token SOPHROSYNE_TOKEN) in
    the client's own way: an environment variable it expands, or a secret it prompts for and keeps.
    """
    import os

    from sophrosyne.serve.client_config import CLIENTS, http_launch, stdio_launch

    with reported():
        if client not in CLIENTS:
            raise typer.BadParameter(f"--client must be one of {', '.join(CLIENTS)}, not {client!r}.")
        if sources is not None and db is not None:
            raise ConfigError("give a database or --sources, not both.", hint="Add the database to the sources file.")
        if url is not None:
            if not url.startswith(("http://", "https://")):
                raise ConfigError(f"--url must be an http(s) URL, not `{url}`.", hint="e.g. http://127.0.0.1:8000/mcp")
            launch = http_launch(url, token=token or policy is not None)
        else:
            if sources is None and db is None and os.environ.get("SOPHROSYNE_SOURCES"):
                sources = Path(os.environ["SOPHROSYNE_SOURCES"])
            options = {"config": settings, "descriptions": descriptions, "policy": policy, "role": role}
            options |= {"directives": directives, "audit_log": audit_log}
            launch = stdio_launch(db, sources=sources, options=options, allow_python=allow_python, environ=os.environ)
        print_client_configuration(client, launch)
