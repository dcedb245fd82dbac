"""SQLAlchemy's dialect for a Spark Thrift server through impyla (the `sophrosyne[spark]` extra): each pooled
connection holds one HiveServer2 session, opened with file reads in table names off."""

from __future__ import annotations

import contextlib
import getpass
import threading
from typing import Any

from sqlalchemy.engine.default import DefaultDialect

# Spark reads ``text.`/etc/passwd` `` (any format's file as a table) unless this is off; the Thrift server takes
# it as a Hive setting of the session (`set:hiveconf:`), which Spark applies to that session's SQL conf.
SESSION_CONFIGURATION = {"set:hiveconf:spark.sql.runSQLOnFiles": "false"}
# Seconds of each Thrift call (the statements themselves are polled, never waited on in one call); a session's
# first statement on a fresh server takes about 3 s.
CALL_TIMEOUT_S = 60
# While a statement runs, each Thrift call waits for the time left to its deadline and this much more: a server
# that stops answering mid-statement ends the call within timeout_s and these seconds, not CALL_TIMEOUT_S.
ANSWER_GRACE_S = 5.0


class SparkConnection:
    """One Thrift connection and the one session Sophrosyne runs statements in, with a stop flag that another
    thread may raise (the session's own thread polls it and cancels the statement: a Thrift client is not
    safe to call from two threads at once)."""

    def __init__(self, thrift: Any, user: str, database: str | None, ping_s: float = CALL_TIMEOUT_S) -> None:
        self.thrift = thrift
        self.ping_s = ping_s  # the pool's check that the server answers: as long as opening may take
        configuration = dict(SESSION_CONFIGURATION)
        if database:
            configuration["use:database"] = database
        self.session = thrift.cursor(user=user, configuration=configuration, close_finished_queries=False)
        self.stop = threading.Event()
        self.dead = False

    def cursor(self) -> Any:
        return self.session

    def ping(self) -> bool:
        if self.dead:  # a call of its timed out: its stream may hold that call's late answer, never reused
            return False
        set_call_timeout(self.thrift, self.ping_s)
        try:
            alive = bool(self.session.ping())
        except Exception:
            alive = False
        finally:
            set_call_timeout(self.thrift, CALL_TIMEOUT_S)
        self.dead = not alive
        return alive

    def commit(self) -> None:
        """Spark has no transactions."""

    def rollback(self) -> None:
        """Spark has no transactions."""

    def close(self) -> None:
        # Within the ping's bound: closing a connection the pool found dead reopens its transport to say so.
        set_call_timeout(self.thrift, self.ping_s)
        try:
            if not self.dead:  # a server that did not answer the ping is not asked to close the session
                self.session.close()
        finally:
            # Closed even when closing it failed: impyla's cursor would otherwise reopen the transport from its
            # __del__ to close the session again, and leave that socket open.
            self.session._closed = True
            try:
                self.thrift.close()
            finally:
                socket = _socket_of(self.thrift)  # left open when closing the session or the transport failed
                if socket is not None:
                    socket.close()


class SparkDialect(DefaultDialect):
    """Only what Sophrosyne asks of SQLAlchemy: URLs, a pool that pings, raw connections."""

    name = "spark"
    driver = "impyla"
    paramstyle = "pyformat"
    supports_statement_cache = True
    default_schema_name = "default"

    @classmethod
    def import_dbapi(cls) -> Any:
        import impala.dbapi

        return impala.dbapi

    def create_connect_args(self, url: Any) -> Any:
        options: dict[str, Any] = {
            "host": url.host or "127.0.0.1",
            "port": url.port or 10000,
            "user": url.username or getpass.getuser(),
            "password": url.password,
            "database": url.database or "default",
            # A server without authentication still speaks SASL PLAIN, with any user name.
            "auth_mechanism": "PLAIN",
            "timeout": CALL_TIMEOUT_S,
            # One try per Thrift call: impyla would reopen the transport and send a status poll again twice
            # after a call timed out, each waiting as long again (a server that stopped answering held a
            # statement three times its bound); a dead connection is the pool's to replace.
            "retries": 1,
        }
        for key, value in url.query.items():  # use_ssl, use_http_transport, http_path, auth_mechanism...
            options[key] = value if key in {"auth_mechanism", "http_path"} else _flag(value)
        return [], options

    def connect(self, *args: Any, **options: Any) -> Any:  # a SparkConnection, which DB-API types do not know
        import impala.dbapi
        from impala.error import OperationalError
        from thrift.transport.TTransport import TTransportException

        user, database = options["user"], options.pop("database")
        # The opening (TCP, TLS and SASL handshakes, the session) within the connect timeout, then each call
        # within CALL_TIMEOUT_S: a server that accepts and never answers fails in seconds.
        opening = options.pop("connect_timeout", None)
        if opening is not None:
            options["timeout"] = opening
        _track_sockets()
        _opening.sockets = []
        try:
            thrift = impala.dbapi.connect(*args, **options)
            connection = SparkConnection(thrift, user, database, opening or CALL_TIMEOUT_S)
        except (TTransportException, OSError) as exc:  # not DB-API errors: the pool would let them through
            for sock in _opening.sockets:  # impyla leaves the socket of a failed opening open
                sock.close()
            raise OperationalError(f"{exc}" or type(exc).__name__) from None
        finally:
            _opening.sockets = None
        if opening is not None:
            set_call_timeout(thrift, CALL_TIMEOUT_S)
        return connection

    def initialize(self, connection: Any) -> None:
        """Nothing to learn from the server: no isolation levels, no server version used."""

    def do_rollback(self, dbapi_connection: Any) -> None:
        """No transactions: nothing to roll back when a connection goes back to the pool."""

    def do_commit(self, dbapi_connection: Any) -> None:
        """No transactions."""

    def do_ping(self, dbapi_connection: Any) -> bool:
        # The session's own cheap call (GetInfo): SQLAlchemy's SELECT 1 would open a session of its own.
        try:
            return bool(dbapi_connection.ping())
        except Exception:  # a dead socket raises rather than answers: the pool opens another connection
            return False


# The Thrift sockets opened by this thread's connect (impyla makes them inside its connect, and leaves the one of
# a failed opening open): closed when the opening fails.
_opening = threading.local()


def _track_sockets() -> None:
    """Have impyla's socket maker note each socket it makes in `_opening` (once per process)."""
    from impala import hiveserver2

    made = hiveserver2.get_socket
    if getattr(made, "tracked", False):
        return

    def get_socket(*args: Any, **kwargs: Any) -> Any:
        sock = made(*args, **kwargs)
        noted = getattr(_opening, "sockets", None)
        if noted is not None:
            noted.append(sock)
        return sock

    get_socket.tracked = True  # type: ignore[attr-defined]
    hiveserver2.get_socket = get_socket


def _socket_of(thrift: Any) -> Any:
    """The Thrift socket (TSocket) of a connection, under its SASL transport, or None."""
    client = getattr(getattr(thrift, "service", None), "client", None)
    transport = getattr(getattr(client, "_iprot", None), "trans", None)
    while transport is not None and not hasattr(transport, "setTimeout"):
        # thrift_sasl's transport, or Thrift's buffered one (auth_mechanism=NOSASL)
        transport = getattr(transport, "_trans", None) or getattr(transport, "_TBufferedTransport__trans", None)
    return transport


def set_call_timeout(thrift: Any, seconds: float) -> None:
    """Bound each later Thrift call of a connection by `seconds`: its socket is under the SASL transport."""
    transport = _socket_of(thrift)
    if transport is not None:
        with contextlib.suppress(OSError):  # a socket closed by a failed call: the pool replaces the connection
            transport.setTimeout(seconds * 1000)


def _flag(value: Any) -> Any:
    text = str(value).lower()
    if text in {"true", "1", "yes"}:
        return True
    if text in {"false", "0", "no"}:
        return False
    return int(text) if text.isdigit() else value
