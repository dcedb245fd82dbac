"""The README runs as written: its first screen, every `sophrosyne ...` example of the command table, the
refused statement it shows, and its Python snippet (the install commands are CI's own steps)."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures.serving import ROOT, connected, health, stdio_params

README = (ROOT / "README.md").read_text()
# The examples of the command table: `sophrosyne ...` in backticks in its second column, placeholders aside.
EXAMPLES = sorted(
    {
        example
        for row in re.findall(r"^\| `sophrosyne [^|]*\| (.*) \|$", README, re.M)
        for example in re.findall(r"`(sophrosyne [^`]+)`", row)
        if "[" not in example and not example.endswith(" LOG")
    }
)


def command(example: str) -> list[str]:
    """An example as the console script it names (installed beside this Python), else as a module."""
    script = Path(sys.executable).with_name("sophrosyne")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "sophrosyne"]
    return head + shlex.split(example)[1:]


def in_process(example: str, cwd: Path) -> Any:
    """An example run in this process, through the app the console script calls (a process each is slow)."""
    from typer.testing import CliRunner

    from sophrosyne.cli.app import app

    here = Path.cwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(app, shlex.split(example)[1:])
    finally:
        os.chdir(here)


def run(example: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(example), capture_output=True, text=True, cwd=cwd, timeout=180)


def test_the_examples_are_found() -> None:
    assert 'sophrosyne tables demo --question "Who was absent in November?"' in EXAMPLES
    assert len(EXAMPLES) >= 12


def test_the_first_screen_runs(tmp_path: Path) -> None:
    # The console script itself, once: the other examples run through the same app in this process.
    first = README[: README.index("## What it does")]
    assert ".venv/bin/sophrosyne demo" in first
    result = run("sophrosyne demo", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "list_tables" in result.stdout and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "example",
    [
        e
        for e in EXAMPLES
        if not e.startswith(
            ("sophrosyne serve", "sophrosyne bench", "sophrosyne audit", "sophrosyne demo", "sophrosyne ask")
        )
        and "postgresql://" not in e
    ],
)
def test_a_command_table_example_runs_as_written(example: str, tmp_path: Path) -> None:
    result = in_process(example, tmp_path)
    assert result.exit_code == 0, f"{example}: {result.stderr}"
    assert result.stdout.strip() and result.exception is None


def test_the_ask_example_runs_with_a_model_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A model is the one thing the README asks for: here a scripted one, named by the settings it documents.
    from fixtures.model_script import Call, Script
    from fixtures.openai_server import scripted_server

    (example,) = [e for e in EXAMPLES if e.startswith("sophrosyne ask")]
    final = (
        "SELECT COUNT(DISTINCT a.employee_id) FROM absence_records a JOIN employees e ON a.employee_id = "
        "e.employee_id JOIN departments d ON e.department = d.dept_code WHERE d.dept_name = 'Field Operations'"
    )
    ground = Call("get_distinct_values", {"table": "departments", "column": "dept_name", "search": "Field Operations"})
    script = Script({"explore": [ground, Call("final_answer", {"sql": final, "explanation": "absent people"})]})
    with scripted_server(script) as (url, _):
        monkeypatch.setenv("SOPHROSYNE_MODEL", "scripted")
        monkeypatch.setenv("SOPHROSYNE_BASE_URL", url)
        result = in_process(example, tmp_path)
    assert result.exit_code == 0, result.stderr
    assert "Field Operations" in result.stdout


@pytest.mark.engine
def test_the_url_example_runs_where_the_server_is(tmp_path: Path) -> None:
    (example,) = [e for e in EXAMPLES if "postgresql://" in e]
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
    except OSError:
        pytest.skip("PostgreSQL is not reachable on 127.0.0.1:5432")
    result = in_process(example, tmp_path)
    assert result.exit_code == 0 and "postgres" in result.stdout, result.stderr


def test_the_stdio_serve_example_serves() -> None:
    stdio = min((e for e in EXAMPLES if e.startswith("sophrosyne serve")), key=len)
    with connected(stdio_params(*shlex.split(stdio)[2:])) as session:
        assert not session.call("execute_sql", {"sql": "SELECT COUNT(*) FROM employees"}).is_error


@pytest.mark.slow
def test_the_http_serve_example_serves(tmp_path: Path) -> None:
    http = max((e for e in EXAMPLES if e.startswith("sophrosyne serve")), key=len)
    argv = command(http)
    port = int(argv[argv.index("--port") + 1])
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:  # taken on this machine: the same command elsewhere
            argv[argv.index("--port") + 1] = str(_free_port())
    process = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        used = int(argv[argv.index("--port") + 1])
        assert _eventually(lambda: health(used)["status"] == "ok")
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_audit_example_reads_what_serve_wrote(tmp_path: Path) -> None:
    from sophrosyne.environment import Environment
    from sophrosyne.serve.server import build_server
    from sophrosyne.settings import Settings

    (example,) = [e for e in EXAMPLES if e.startswith("sophrosyne audit")]
    log = shlex.split(example)[-1]
    # The log `serve demo --audit-log audit.jsonl` writes, written by the same server in this process.
    env = Environment.open("demo", settings=Settings(audit_log=tmp_path / log, directives="none"))
    with connected(build_server(env)) as session:
        session.call("list_tables", {})
    result = in_process(example, tmp_path)
    assert result.exit_code == 0 and "list_tables" in result.stdout, result.stderr


@pytest.mark.slow
def test_the_bench_example_runs_where_the_datasets_are(tmp_path: Path) -> None:
    # The harness's other examples (run, score, merge, report, tokens) need a model and earlier runs: its own
    # tests run them (tests/bench/test_bench_*.py).
    (example,) = [e for e in EXAMPLES if e.startswith("sophrosyne bench directives")]
    datasets = Path(os.environ.get("SOPHROSYNE_DATASETS") or ROOT.parent / "shared" / "datasets")
    if not (datasets / "bird_dev").exists():
        pytest.skip(f"the BIRD dataset is not at {datasets}")
    result = run(example, tmp_path)
    assert result.returncode == 0 and (tmp_path / "out.json").exists(), result.stderr


def test_the_refused_statement_reads_as_shown(tmp_path: Path) -> None:
    shown = re.search(r"```console\n\$ (sophrosyne [^\n]+)\n(error: [^\n]+\nhint: [^\n]+)\n```", README)
    assert shown is not None
    result = in_process(shown.group(1), tmp_path)
    assert result.exit_code == 1 and result.stderr.strip() == shown.group(2)


def test_the_python_snippet_runs_as_written(tmp_path: Path) -> None:
    snippet = re.search(r"```python\n(from sophrosyne import Environment.*?)```", README, re.S)
    assert snippet is not None
    result = subprocess.run(
        [sys.executable, "-c", snippet.group(1)], capture_output=True, text=True, cwd=tmp_path, timeout=180
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 3 and "Operations" in lines[1] and lines[2] == "[[600]]"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _eventually(check: object, seconds: float = 60) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


CLIENT_HEADINGS = {
    "Claude Code": "claude-code",
    "Claude Desktop": "claude-desktop",
    "Cursor": "cursor",
    "VS Code": "vscode",
    "OpenCode": "opencode",
    "goose": "goose",
}


def test_each_clients_block_is_what_config_prints_for_it() -> None:
    import dataclasses

    import yaml

    from sophrosyne.serve.client_config import CLIENTS, snippet_for, stdio_launch

    connect = README[README.index("## Connect your agent") : README.index("## Point it at your database")]
    blocks = dict(re.findall(r"^\*\*([^*]+)\*\* \(.*?\)\n\n```(?:json|yaml)\n(.*?)```", connect, re.M | re.S))
    assert set(CLIENT_HEADINGS) <= set(blocks) and set(CLIENT_HEADINGS.values()) == set(CLIENTS)
    # What `sophrosyne config --client NAME postgresql://agent@db.internal/shop` prints with the password
    # exported, for an install in /home/you/sophrosyne (the README's placeholders).
    launch = stdio_launch(
        "postgresql://agent@db.internal/shop", environ={"SOPHROSYNE_DATABASE_PASSWORD": "secret"}, argv0="/none"
    )
    launch = dataclasses.replace(launch, command=["/home/you/sophrosyne/.venv/bin/sophrosyne", "serve"])
    for heading, client in CLIENT_HEADINGS.items():
        printed = snippet_for(client, launch).text.replace(str(Path.home()), "/home/you")
        shown = blocks[heading]
        assert yaml.safe_load(shown) == yaml.safe_load(printed), heading  # JSON is YAML too
        assert "secret" not in shown
