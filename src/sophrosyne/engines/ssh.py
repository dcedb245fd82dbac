"""SSH tunnels to a database server, as a source's `ssh` section gives them (docs/connections.md): asyncssh in a
thread of its own holds one SSH connection and a listener on 127.0.0.1; each connection the driver opens to
that listener is carried over the SSH connection to the server's host and port. The tunnel opens with the
source and closes with it; an SSH connection that dropped is opened again before the driver's next connect."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sophrosyne.engines.options import option_files, option_table
from sophrosyne.errors import ConfigError, ConnectionFailed

KEYS = {"host", "port", "user", "key", "known_hosts", "check_host_key"}


@dataclass(frozen=True)
class SSH:
    """The SSH server a database is reached through (its `host` and `port` as the SSH server sees them)."""

    host: str
    port: int = 22
    user: str | None = None  # None: the local user's name
    key: Path | None = None  # None: the SSH agent (SSH_AUTH_SOCK) and ~/.ssh's default keys
    known_hosts: Path | None = None  # None: ~/.ssh/known_hosts
    check_host_key: bool = True  # off only for a throwaway test set-up: the host key is then never checked


def read_ssh(entry: Any, where: str, folder: Path) -> SSH:
    """An `ssh` table of a sources file (`where` names it in errors); relative paths are from `folder`."""
    entry = option_table(entry, where, KEYS, '[sources.NAME.ssh] with host = "bastion.example.org"')
    host = entry.get("host")
    if not isinstance(host, str) or not host.strip():
        raise ConfigError(f"{where} needs `host`, the SSH server's name.")
    port = entry.get("port", 22)
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise ConfigError(f"{where}.port must be a port number (1-65535).")
    check = entry.get("check_host_key", True)
    if not isinstance(check, bool):
        raise ConfigError(f"{where}.check_host_key must be true or false.")
    for key in ("user", "key", "known_hosts"):
        if key in entry and not isinstance(entry[key], str):
            raise ConfigError(f"{where}.{key} must be a string.")
    files = option_files(entry, where, folder, ("key", "known_hosts"))
    return SSH(host, port, entry.get("user"), files["key"], files["known_hosts"], check)


class Tunnel:
    """A listener on 127.0.0.1 whose connections reach `target` (host, port) through the SSH server."""

    def __init__(self, ssh: SSH, target: tuple[str, int], timeout_s: float) -> None:
        self.ssh = ssh
        self.target = target
        self.timeout_s = timeout_s
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"ssh {ssh.host}", daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._connection: Any = None  # asyncssh's SSHClientConnection, None when closed or not yet opened
        self._lock: asyncio.Lock | None = None
        self.opened = 0  # SSH connections opened so far (one, and one per reconnect)

    @property
    def where(self) -> str:
        return f"{self.ssh.host}:{self.ssh.port}"

    def open(self) -> int:
        """Start the listener (the SSH connection opens at the driver's first connect); the listener's port."""
        self._thread.start()
        try:
            self.port = self._run(self._start())
        except BaseException:
            self.close()
            raise
        return self.port

    def ensure(self) -> None:
        """The SSH connection, opened again if it dropped (called before each connect of the driver)."""
        self._run(self._connected())

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self._run(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    def _run(self, work: Any) -> Any:
        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        try:
            return future.result(self.timeout_s + 1)
        except TimeoutError:
            future.cancel()
            raise ConnectionFailed(
                f"the SSH server {self.where} did not answer within {self.timeout_s:g} s.",
                hint="Check the ssh section's host and port, and that the SSH server runs; connect_timeout_s sets "
                "the wait.",
            ) from None

    async def _start(self) -> int:
        self._lock = asyncio.Lock()
        self._server = await asyncio.start_server(self._carry, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        if self._connection is not None:
            self._connection.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._connection.wait_closed(), 2)
            self._connection = None
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()

    async def _connected(self) -> Any:
        asyncssh = _asyncssh()
        assert self._lock is not None
        async with self._lock:
            if self._connection is not None:
                return self._connection
            ssh = self.ssh
            options: dict[str, Any] = {
                "port": ssh.port,
                "known_hosts": (str(ssh.known_hosts) if ssh.known_hosts else ()) if ssh.check_host_key else None,
                "connect_timeout": self.timeout_s,
                "login_timeout": self.timeout_s,
                # A dead peer (its host down, a link cut) is found in a minute at most.
                "keepalive_interval": 15,
                "keepalive_count_max": 4,
            }
            if ssh.user:
                options["username"] = ssh.user
            if ssh.key:
                options |= {"client_keys": [str(ssh.key)], "agent_path": None}
            try:
                connection = await asyncssh.connect(ssh.host, **options)
            except asyncssh.HostKeyNotVerifiable as exc:
                raise ConnectionFailed(
                    f"the SSH server {self.where} offered a host key that is not the one known for it ({exc.reason}).",
                    hint="Check that you reach the right server; if its key changed on purpose, put the new one in "
                    "known_hosts (ssh-keyscan, then compare its fingerprint with the server's).",
                ) from None
            except asyncssh.PermissionDenied as exc:
                raise ConnectionFailed(
                    f"the SSH server {self.where} refused the login of {ssh.user or 'the local user'} ({exc.reason}).",
                    hint="Check the ssh section's user and key (or the keys of the SSH agent).",
                ) from None
            except (OSError, asyncssh.Error) as exc:
                raise ConnectionFailed(
                    f"cannot open the SSH tunnel through {self.where}: {getattr(exc, 'reason', None) or exc}.",
                    hint="Check the ssh section's host, port, user and key, and that the SSH server allows TCP "
                    "forwarding.",
                ) from None
            self._connection = connection
            self.opened += 1
            asyncio.get_running_loop().create_task(self._forget_when_closed(connection))
            return connection

    async def _forget_when_closed(self, connection: Any) -> None:
        await connection.wait_closed()
        if self._connection is connection:
            self._connection = None

    async def _carry(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection of the driver, carried through the SSH server to the target and back."""
        try:
            connection = await self._connected()
            remote_reader, remote_writer = await connection.open_connection(*self.target)
        except Exception:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, remote_writer), _pipe(remote_reader, writer), return_exceptions=True)


def _asyncssh() -> Any:
    """asyncssh, imported without its warning that DSA keys are deprecated (it still knows them)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="DSA is deprecated")
        import asyncssh
    return asyncssh


async def _pipe(reader: Any, writer: Any) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(Exception):
            writer.close()
