"""HTTP connections held to account: each must send its request in time, and one client holds only so many.

uvicorn keeps a connection that never sends its headers for as long as the client likes (its keep-alive timer
runs only after a first answer, and a byte of a header stops it), one file descriptor each: a client that opens
as many as the descriptor limit locks everyone out. Here a request, headers and body, must arrive whole within
`http_request_s` of the connection opening or of its previous answer, and a client address beyond
`http_connections_per_client` open connections is answered 429 and closed at once.

Requests are parsed by httptools (llhttp, in C) when it is installed, as uvicorn itself prefers: h11, in pure
Python, was a fifth of the server's CPU per small call (benchmarks/serving.py); the guard is the same on both.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.protocols.http.h11_impl import H11Protocol

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools is not installed: h11 parses
    HttpToolsProtocol = None  # type: ignore[assignment,misc]

from sophrosyne.settings import Limits, Settings


@dataclass(frozen=True)
class ConnectionLimits:
    """What one HTTP connection and one client address may hold (see the settings of the same names)."""

    request_s: float = Limits.model_fields["http_request_s"].default
    per_client: int = Limits.model_fields["http_connections_per_client"].default

    @classmethod
    def of(cls, settings: Settings) -> ConnectionLimits:
        return cls(request_s=settings.limits.http_request_s, per_client=settings.limits.http_connections_per_client)


# asyncio accepts up to this many waiting connections at each wake-up before any of them is looked at: kept
# small, so that a flood cannot take every descriptor before the cap refuses it (uvicorn's default is 2048).
ACCEPT_BACKLOG = 100
# A soft descriptor limit raised to the hard one (at most this): many systems start processes at 1024.
MOST_DESCRIPTORS = 65536


def raise_descriptor_limit() -> None:
    """Let the server hold as many connections as the system allows it, not the soft limit it started with."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = MOST_DESCRIPTORS if hard == resource.RLIM_INFINITY else min(hard, MOST_DESCRIPTORS)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


_TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def _too_many(limit: int) -> bytes:
    body = (
        f"This address already holds {limit} open connections to the server (http_connections_per_client): "
        "close some, or reuse one, and connect again.\n"
    ).encode()
    head = (
        "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    ).encode()
    return head + body


class Guarded:
    """A deadline on reading each request and a cap on connections per address, over one of uvicorn's HTTP
    protocols (its `client`, `cycle`, `loop`, `transport` and `on_response_complete`).

    The limits are set once per process (`configure`), before the server accepts: uvicorn builds each
    connection's protocol itself, and its worker processes name the class by import."""

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()
    # Open connections by client address, in this process (whichever protocol parses).
    open_by_client: ClassVar[Counter[str]] = Counter()
    client: Any
    cycle: Any
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._address = ""
        self._counted = False
        self._deadline: asyncio.TimerHandle | None = None
        self._began = False  # a byte of the request awaited has arrived

    @classmethod
    def configure(cls, limits: ConnectionLimits) -> None:
        Guarded.limits = limits

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._address = self.client[0] if self.client else ""
        held = self.open_by_client[self._address]
        if held >= self.limits.per_client:
            self.transport.write(_too_many(self.limits.per_client))
            self.transport.close()  # the answer goes out first; the descriptor is freed at once
            return
        self.open_by_client[self._address] = held + 1
        self._counted = True
        self._await_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        if self._counted:
            self._counted = False
            self.open_by_client[self._address] -= 1
            if self.open_by_client[self._address] <= 0:
                del self.open_by_client[self._address]
        super().connection_lost(exc)  # type: ignore[misc]

    def data_received(self, data: bytes) -> None:
        self._began = True
        super().data_received(data)  # type: ignore[misc]

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing():
            self._await_request()  # the next request on this connection has the same time to arrive

    def _await_request(self) -> None:
        self._stop_deadline()
        self._began = False
        self._deadline = self.loop.call_later(self.limits.request_s, self._request_timed_out)

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _reading(self) -> bool:
        """Whether the connection waits for the client: for a request's headers, or for its body."""
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            return True
        return cycle.more_body and not cycle.response_started

    def _request_timed_out(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or not self._reading():
            return  # the request is in and being answered: the answer is not bounded here
        if self._began:
            self.transport.write(_TIMED_OUT)
        self.transport.close()


class GuardedH11Protocol(Guarded, H11Protocol):
    """uvicorn's h11 protocol, guarded."""


GuardedProtocol: type[asyncio.Protocol] = GuardedH11Protocol
if HttpToolsProtocol is not None:

    class GuardedHttpToolsProtocol(Guarded, HttpToolsProtocol):
        """uvicorn's httptools protocol, guarded."""

    GuardedProtocol = GuardedHttpToolsProtocol
