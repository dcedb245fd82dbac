"""SSH tunnels, through a real OpenSSH server on 127.0.0.1 with keys made for the run (scripts/ssh_ci.sh starts
it and runs these `ssh` tests): every tool answers on PostgreSQL and MariaDB behind the tunnel, a wrong host key
is refused, a dropped SSH connection is opened again on the next call, and nothing is left once `serve` exits.
The options' checks run without a server."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fixtures.engines import mariadb_database, postgres_schema, unreachable
from fixtures.serving import CALLS, connected, stdio_params, text_of
from sophrosyne.engines.ssh import SSH
from sophrosyne.errors import ConfigError, ConnectionFailed
from sophrosyne.settings import Settings
from sophrosyne.sources import Sources, load_sources


def _sources(folder: Path, url: str, ssh: str) -> Path:
    path = folder / "sources.toml"
    path.write_text(f'[sources.shop]\nurl = "{url}"\n\n[sources.shop.ssh]\n{ssh}\n')
    return path


# Through the server -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sshd() -> Iterator[tuple[Path, int, int]]:
    """The run folder of scripts/ssh_ci.sh (keys, known_hosts files), sshd's port and PID."""
    folder = os.environ.get("SOPHROSYNE_TEST_SSH")
    if not folder:
        unreachable("OpenSSH", "run the `ssh` tests through scripts/ssh_ci.sh, which starts sshd")
    yield Path(str(folder)), int(os.environ["SOPHROSYNE_TEST_SSH_PORT"]), int(os.environ["SOPHROSYNE_TEST_SSH_PID"])


def _section(sshd: tuple[Path, int, int], known_hosts: str = "known_hosts") -> str:
    folder, port, _ = sshd
    return (
        f'host = "127.0.0.1"\nport = {port}\nuser = "root"\nkey = "{folder}/client_key"\n'
        f'known_hosts = "{folder}/{known_hosts}"'
    )


def _sessions(pid: int) -> list[int]:
    """The PIDs of sshd's per-connection processes (its children), or of any process's children."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:  # ended meanwhile
        return []


def _end(pid: int) -> None:
    """End a session of sshd: its process and theirs (the unprivileged one holds the connection)."""
    for child in _sessions(pid):
        _end(child)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _wait_for(condition: object, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@contextmanager
def _database(engine: str) -> Iterator[str]:
    built = postgres_schema("ssh") if engine == "postgres" else mariadb_database("ssh")
    with built as url:
        yield url


@pytest.mark.ssh
@pytest.mark.parametrize("engine", ["postgres", "mariadb"])
def test_every_tool_answers_through_the_tunnel_and_nothing_is_left_after_serve(
    sshd: tuple[Path, int, int], tmp_path: Path, engine: str
) -> None:
    before = _sessions(sshd[2])
    with _database(engine) as url:
        path = _sources(tmp_path, url, _section(sshd))
        env = {"SOPHROSYNE_DIRECTIVES": "none", "SOPHROSYNE_SCHEMA_CHECK_S": "0", "SOPHROSYNE_ALLOW_EXPORTS": "true"}
        with connected(stdio_params("--sources", str(path), "--allow-python", env=env)) as session:
            deadline = time.monotonic() + 60
            while "still being read" in text_of(session.call("list_tables", {})) and time.monotonic() < deadline:
                time.sleep(0.5)
            for name, arguments in CALLS.items():
                result = session.call(name, arguments)
                assert not result.is_error, (name, text_of(result))
            assert "Operations" in text_of(session.call("find_rows", CALLS["find_rows"]))
            assert len(_sessions(sshd[2])) > len(before)  # the tunnel's SSH connection, at sshd
        # `serve` has exited: its SSH connection is closed (sshd's process for it ends).
        assert _wait_for(lambda: _sessions(sshd[2]) == before), _sessions(sshd[2])


@pytest.mark.ssh
@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://postgres@127.0.0.1:5432/test", "postgresql+psycopg://postgres@127.0.0.1:5432/test"),
        ("mysql://root@127.0.0.1:3306/test", "mysql+pymysql://root@127.0.0.1:3306/test"),
    ],
)
def test_a_wrong_host_key_is_refused(sshd: tuple[Path, int, int], tmp_path: Path, url: str, shown: str) -> None:
    path = _sources(tmp_path, url, _section(sshd, "wrong_known_hosts"))
    with pytest.raises(ConnectionFailed) as caught:
        Sources.open(load_sources(path), Settings(connect_timeout_s=3))
    # The server's URL, not the tunnel's port on 127.0.0.1.
    assert caught.value.message.startswith(f"cannot connect to {shown}: the SSH server 127.0.0.1:")
    assert "offered a host key that is not the one known for it" in caught.value.message
    assert "known_hosts" in (caught.value.hint or "")


@pytest.mark.ssh
def test_a_dropped_tunnel_is_opened_again_on_the_next_call(sshd: tuple[Path, int, int], tmp_path: Path) -> None:
    path = _sources(tmp_path, "postgresql://postgres@127.0.0.1:5432/test", _section(sshd))
    before = _sessions(sshd[2])
    sources = Sources.open(load_sources(path), Settings(connect_timeout_s=3))
    try:
        db = sources.get("shop").db
        assert db.run("SELECT 1 AS n").rows == [(1,)]
        tunnel = db.pool.tunnel  # type: ignore[attr-defined]
        assert tunnel.opened == 1
        ours = [pid for pid in _sessions(sshd[2]) if pid not in before]
        assert ours
        for pid in ours:  # sshd's processes of our SSH connection, as a network cut or a crash would end them
            _end(pid)
        assert _wait_for(lambda: tunnel._connection is None)
        assert db.run("SELECT 2 AS n").rows == [(2,)]
        assert tunnel.opened == 2
    finally:
        sources.close()
    assert _wait_for(lambda: _sessions(sshd[2]) == before), (before, _sessions(sshd[2]), tunnel._thread.is_alive())


# The options, without a server ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ssh", "error"),
    [
        ('user = "x"', r"needs `host`"),
        ('host = "b"\nport = 70000', r"port must be a port number"),
        ('host = "b"\nkey = "missing"', r"ssh\.key: .*missing is not a file"),
        ('host = "b"\npassword = "x"', r"unknown key `password`"),
        ('host = "b"\ncheck_host_key = "no"', r"check_host_key must be true or false"),
    ],
)
def test_ssh_options_are_checked_when_the_file_is_read(tmp_path: Path, ssh: str, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        load_sources(_sources(tmp_path, "postgresql://u@db.internal/shop", ssh))


def test_ssh_options_are_read_with_checking_on_by_default(tmp_path: Path) -> None:
    (tmp_path / "id").write_text("key")
    spec = load_sources(_sources(tmp_path, "mysql://u@db.internal/shop", 'host = "bastion"\nuser = "me"\nkey = "id"'))
    assert spec[0].ssh == SSH("bastion", 22, "me", tmp_path / "id", None, True)
    path = tmp_path / "file.toml"
    path.write_text('[sources.hr]\npath = "hr.sqlite"\n\n[sources.hr.ssh]\nhost = "b"\n')
    with pytest.raises(ConfigError, match=r"ssh is for a database server's `url`"):
        load_sources(path)


def test_an_ssh_server_that_is_not_there_fails_with_what_to_check(tmp_path: Path) -> None:
    path = _sources(tmp_path, "postgresql://u@127.0.0.1:5432/test", 'host = "127.0.0.1"\nport = 1')
    with pytest.raises(ConnectionFailed) as caught:
        Sources.open(load_sources(path), Settings(connect_timeout_s=2))
    assert "cannot open the SSH tunnel through 127.0.0.1:1" in caught.value.message
