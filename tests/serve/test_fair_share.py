"""A fair share of the threads for every client (issue 33): one token floods with slow statements over HTTP while
another token's trivial call is timed; and the share's rules, turn by turn, without a server."""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

import sophrosyne.serve.calls as calls_module
from fixtures.engines import build_sqlite
from fixtures.policies import POLICY, TOKENS
from fixtures.serving import SLOW_SQL, free_port
from sophrosyne.environment import Environment
from sophrosyne.errors import Busy, QueryTimeout
from sophrosyne.serve.calls import Calls, FairShare
from sophrosyne.serve.run import http_asgi
from sophrosyne.serve.server import build_server
from sophrosyne.settings import Settings
from sophrosyne.sources import Sources

# A slow statement runs this long (its time limit); a trivial call answered under load must take well under it.
TIMEOUT_S = 3.0
THREADS, PER_CLIENT, QUEUE = 4, 2, 2


@contextlib.contextmanager
def served(folder: Path) -> Iterator[str]:
    """The MCP server over streamable HTTP with bearer tokens, in this process: 4 threads, 2 per client."""
    (folder / "policy.toml").write_text(POLICY)
    settings = Settings(
        policy_file=folder / "policy.toml",
        directives="none",
        timeout_s=TIMEOUT_S,
        worker_threads=THREADS,
        client_calls=PER_CLIENT,
        client_queue=QUEUE,
    )
    env = Environment.open(build_sqlite(folder / "hr.sqlite"), settings=settings)
    app = http_asgi(build_server(Sources.single(env), require_token=True), "127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{server.config.port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
        env.db.close()


@contextlib.asynccontextmanager
async def session(url: str, token: str) -> AsyncIterator[Client]:
    # Plain HTTP on loopback: no TLS context to build (0.2 s a client on this machine).
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, verify=False, timeout=httpx2.Timeout(30.0, read=300.0)) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def test_a_flooding_token_leaves_another_token_its_threads(tmp_path: Path) -> None:
    """Token ops sends 6 slow statements at once (2 run, 2 wait their turn, 2 are refused as busy); token admin's
    trivial calls meanwhile take about what they take on an idle server, not the second a thread frees up in."""
    unloaded: list[float] = []
    loaded: list[float] = []
    flood: list[tuple[float, str]] = []  # (seconds after the flood began, answer)

    async def trivial(client: Client, into: list[float]) -> None:
        started = time.perf_counter()
        result = await client.call_tool("execute_sql", {"sql": "SELECT 1 AS one"})
        into.append(time.perf_counter() - started)
        assert not result.is_error, text_of(result)

    async def run(url: str) -> None:
        async with (
            session(url, TOKENS["admin"]) as other,
            session(url, TOKENS["ops"]) as flooder,
            session(url, TOKENS["ops"]) as same_token,
        ):
            for _ in range(4):
                await trivial(other, unloaded)
            began = time.perf_counter()

            async def slow() -> None:
                result = await flooder.call_tool("execute_sql", {"sql": SLOW_SQL})
                flood.append((time.perf_counter() - began, text_of(result)))

            async with anyio.create_task_group() as group:
                for _ in range(PER_CLIENT + QUEUE + 2):
                    group.start_soon(slow)
                await anyio.sleep(0.15)  # the flood's calls are in: 2 running, 2 waiting, 2 refused
                for _ in range(4):
                    await trivial(other, loaded)
                measured.append(time.perf_counter() - began)
                # The share is the token's, not the session's: another session of it finds its queue full.
                same.append(text_of(await same_token.call_tool("execute_sql", {"sql": "SELECT 1 AS one"})))
                group.cancel_scope.cancel()  # the flood's client leaves; its statements stop

    measured: list[float] = []
    same: list[str] = []
    with served(tmp_path) as url:
        anyio.run(run, url)
    # Without the share the 4 threads are the flood's, and a trivial call waits ~TIMEOUT_S for one.
    assert max(loaded) < TIMEOUT_S / 2, (loaded, unloaded)
    # Measured under load: no slow statement had ended (each runs TIMEOUT_S) when the last trivial call did.
    assert measured[0] < TIMEOUT_S and all("at most" in text for _, text in flood), (measured, flood)
    refused = [text for _, text in flood]
    assert len(refused) == 2, refused
    assert all(f"you have {PER_CLIENT} calls running (at most {PER_CLIENT} run at once)" in t for t in refused)
    assert all("Hint: Wait for the answers of your calls in flight" in t for t in refused)
    assert "found 2 waiting already" in same[0], same
    print(
        f"\ntrivial call: unloaded median {statistics.median(unloaded) * 1000:.0f} ms, under flood median "
        f"{statistics.median(loaded) * 1000:.0f} ms, max {max(loaded) * 1000:.0f} ms"
    )


# -- the share's rules, without a server ----------------------------------------------------------------------


def test_a_client_runs_at_most_its_cap_and_a_newcomer_takes_the_reserve() -> None:
    async def main() -> None:
        share = FairShare(size=8, per_client=8, queue=10, wait_s=5)
        assert (share.cap, share.reserve) == (6, 2)  # three quarters at most; a quarter kept for newcomers
        for _ in range(6):
            await share.enter("flood")
        with anyio.move_on_after(0.05) as waited:
            await share.enter("flood")
        assert waited.cancel_called and share.running == {"flood": 6}
        for name in ("b", "c"):  # each client's first call takes one of the reserved threads
            await share.enter(name)
        assert share.busy == 8

    anyio.run(main)


def test_a_second_flooder_does_not_take_the_reserve() -> None:
    async def main() -> None:
        share = FairShare(size=8, per_client=4, queue=10, wait_s=5)
        for _ in range(4):
            await share.enter("a")
        await share.enter("b")  # 5 busy, 3 free: b may take one more (free > reserve)...
        await share.enter("b")
        with anyio.move_on_after(0.05) as waited:
            await share.enter("b")  # ...but not the last 2, kept for clients with no call running
        assert waited.cancel_called and share.busy == 6
        await share.enter("c")
        assert share.busy == 7

    anyio.run(main)


def test_waiting_clients_take_turns_as_threads_free_up() -> None:
    async def main() -> None:
        share = FairShare(size=8, per_client=4, queue=10, wait_s=1)
        order: list[str] = []
        for name in ("a", "a", "a", "a", "b", "b"):
            await share.enter(name)  # a at its cap; b may not take the last 2 threads (the reserve)

        async def wait(name: str) -> None:
            await share.enter(name)
            order.append(name)

        async with anyio.create_task_group() as group:
            for name in ("a", "a", "b", "b"):
                group.start_soon(wait, name)
                await anyio.sleep(0.01)
            for name in ("a", "b", "a", "a"):
                share.leave(name)
                await anyio.sleep(0.01)
        # a's calls came first, but b is served between them: each client's queue takes its turn.
        assert order == ["a", "b", "a", "b"], order

    anyio.run(main)


def test_a_full_queue_and_a_long_wait_are_busy_errors_that_say_what_to_do() -> None:
    async def main() -> None:
        share = FairShare(size=4, per_client=1, queue=1, wait_s=0.05)
        await share.enter("a")
        with pytest.raises(Busy) as waited:
            await share.enter("a")
        assert "waited 0.05 s" in str(waited.value) and "at most 1 at once" in str(waited.value)
        async with anyio.create_task_group() as group:
            group.start_soon(share.enter, "a")
            await anyio.sleep(0.01)
            with pytest.raises(Busy) as full:
                await share.enter("a")
            assert "found 1 waiting already" in str(full.value)
            group.cancel_scope.cancel()
        assert share.running == {"a": 1} and not share._waiting

    anyio.run(main)


def test_a_thread_handed_to_a_cancelled_call_is_given_back() -> None:
    async def main() -> None:
        share = FairShare(size=4, per_client=1, queue=5, wait_s=5)
        await share.enter("a")

        async def call() -> None:  # as Calls.run: a thread taken is given back however the call ends
            await share.enter("a")
            try:
                await anyio.sleep(5)
            finally:
                share.leave("a")

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await anyio.sleep(0.01)
            share.leave("a")  # hands the thread to the waiting call...
            group.cancel_scope.cancel()  # ...which is cancelled before it runs
        assert share.busy == 0 and share.running == {} and not share._waiting

    anyio.run(main)


def test_a_call_answered_at_its_deadline_keeps_its_thread_until_its_work_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call whose work does not notice its deadline is answered at the deadline (plus grace), but its client's
    share counts it until the work has ended: otherwise a client could pile up threads that still run."""
    monkeypatch.setattr(calls_module, "GRACE_S", 0.05)
    calls = Calls(Settings(worker_threads=4, client_calls=1, client_queue=0))
    release, done = threading.Event(), threading.Event()

    def deaf() -> str:
        release.wait(5)  # notices no deadline
        done.set()
        return "late"

    async def main() -> None:
        with pytest.raises(QueryTimeout):
            await calls.run(deaf, timeout_s=0.05)
        assert not done.is_set()
        with pytest.raises(Busy):  # its one thread still runs the first call's work
            await calls.run(lambda: "quick", timeout_s=1)
        release.set()
        while not done.is_set():
            await anyio.sleep(0.01)
        await anyio.sleep(0.02)
        assert await calls.run(lambda: "quick", timeout_s=1) == "quick"
        assert calls.pool("tools").busy == 0 and calls.active == 0

    anyio.run(main)


def test_a_client_with_no_call_running_is_told_the_server_is_busy_with_others() -> None:
    async def main() -> None:
        share = FairShare(size=4, per_client=3, queue=0, wait_s=0.05)
        for name in ("a", "a", "a", "b"):
            await share.enter(name)
        with pytest.raises(Busy) as refused:
            await share.enter("c")
        assert "busy with other clients' calls: no thread is free" in str(refused.value)
        assert "Send it again in a moment" in str(refused.value)

    anyio.run(main)
