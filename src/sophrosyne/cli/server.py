"""`sophrosyne serve`: the MCP server over stdio or HTTP, with the client configuration printed on start."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sophrosyne.cli.targets import (
    DB_HELP,
    DEMO,
    ConfigOption,
    DescriptionsOption,
    DirectivesOption,
    PolicyOption,
    RoleOption,
    resolve_db,
    say_when_the_demo_is_served,
)
from sophrosyne.cli.terminal import current_log_level, err_console, reported
from sophrosyne.errors import ConfigError


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

    from sophrosyne.serve.handshake import EarlyStdio, snapshot_path

    # Over stdio the handshake is answered at once, before the heavy imports below (see handshake.py).
    early = None if http else EarlyStdio(snapshot_path(sys.argv[1:]))
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
        from sophrosyne.serve.client_config import client_configuration, serve_arguments, server_command
        from sophrosyne.serve.run import serve as run_server
        from sophrosyne.serve.run import serve_workers

        if allow_python:
            from sophrosyne.sandbox.executor import check_sandbox

            check_sandbox(opened.settings)  # refuse to start rather than offer Python less isolated
        for name, env in opened.environments.items():
            err_console.print(f"{name}: {env.dialect} at {env.url}", highlight=False, markup=False, soft_wrap=True)
        options: dict[str, str | Path | None] = {
            "sources": sources,
            "config": config,
            "descriptions": descriptions,
            "policy": policy,
            "role": role,
            "directives": directives,
            "audit_log": audit_log,
        }
        url = f"http://{host}:{port}/mcp" if http else None
        token = http and any(env.policy is not None for env in opened.environments.values())
        # A database given in SOPHROSYNE_DATABASE stays there: the printed command would show its password.
        given = db or (None if os.environ.get("SOPHROSYNE_DATABASE") else DEMO)
        args = serve_arguments(None if sources is not None else given, options)
        if allow_python:
            args.append("--allow-python")
        err_console.print(
            client_configuration(server_command(), args, http_url=url, token=token),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        if workers > 1:
            opened.close()
            serve_workers(spec, workers)
        else:
            run_server(
                opened,
                http=http,
                host=host,
                port=port,
                log_level=current_log_level(),
                early=early,
                allow_python=allow_python,
            )
