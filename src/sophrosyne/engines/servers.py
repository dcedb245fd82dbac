"""What the engines behind a URL share (see postgres.py and mysql.py): SQLAlchemy's URL parsing, pool and
inspector, which reads their catalogs."""

from __future__ import annotations

import ipaddress
import socket
import threading
from typing import TYPE_CHECKING, Any, ClassVar

from sophrosyne.base import deadline
from sophrosyne.engines.base import CONNECT_TIMEOUT_S, CatalogSource, Engine
from sophrosyne.engines.catalogs import path_first, read_schemas, read_timeout
from sophrosyne.errors import ConfigError, ConnectionFailed
from sophrosyne.schema.catalog import Catalog, Column, ForeignKey, Table

if TYPE_CHECKING:
    from sqlalchemy.engine import URL
    from sqlalchemy.engine import Engine as SQLAlchemyEngine

    from sophrosyne.engines.tls import TLS


class ServerEngine(Engine):
    """An engine behind a URL, reached through SQLAlchemy's URL parsing, pool and inspector."""

    # The DB-API driver used, and the driver names of a URL that are replaced by it.
    driver: ClassVar[str] = ""
    replaced_drivers: ClassVar[tuple[str, ...]] = ()
    # URL schemes SQLAlchemy knows by another name (`postgres://`, as Heroku and libpq write it).
    backend_names: ClassVar[dict[str, str]] = {}
    reads_file_names = False
    # The port a URL without one reaches.
    default_port: ClassVar[int] = 0

    def prepare_url(
        self, url: URL, connect_timeout_s: float = CONNECT_TIMEOUT_S, read_timeout_s: float | None = None
    ) -> tuple[URL, dict[str, Any]]:
        """The URL to connect with (the driver chosen) and the driver's connect arguments: a connection opens
        (name lookup, TCP, TLS, login) within `connect_timeout_s`, and once open no read or write of it waits
        longer than `read_timeout_s` (None: the engine's own bound), where the driver can bound them."""
        scheme, _, driver = url.drivername.partition("+")
        backend = self.backend_names.get(scheme.lower(), scheme)
        if not driver or driver in self.replaced_drivers:
            driver = self.driver
        if f"{backend}+{driver}" != url.drivername:
            url = url.set(drivername=f"{backend}+{driver}")
        return url, {}

    def tls_args(self, tls: TLS) -> dict[str, Any]:
        """The driver's connect arguments for a source's `tls` section (engines/tls.py)."""
        raise ConfigError(
            f"a `tls` section is for PostgreSQL and MySQL/MariaDB sources, not {self.name}.",
            hint="Give a Spark server's TLS in its URL: ?use_ssl=true&ca_cert=/path/ca.pem.",
        )

    def through_tunnel(self, url: URL, port: int) -> tuple[URL, dict[str, Any]]:
        """The URL and connect arguments that reach the server through an SSH tunnel's port on 127.0.0.1."""
        return url.set(host="127.0.0.1", port=port), {}

    def connected(self, raw: Any, read_timeout_s: float) -> None:
        """Called on each new DB-API connection, once open: the bound of its later reads and writes."""

    def read_tables(self, source: CatalogSource) -> Catalog:
        if source.server is None:
            raise ConfigError(
                f"the catalog of a {self.name} database is read through its SQLAlchemy engine; none given."
            )
        return read_inspected(self, source, source.server)


def resolve(host: str | None, timeout_s: float) -> None:
    """Look the host's name up within `timeout_s` (drivers wait on the system's resolver for as long as it
    takes): a name that does not resolve in time is told as such. The lookup left running ends on its own."""
    if not host or host.startswith("/") or "," in host:  # a Unix socket's folder; several hosts (libpq's)
        return
    try:
        ipaddress.ip_address(host.strip("[]"))
        return  # an address: nothing to look up
    except ValueError:
        pass
    failure: list[BaseException] = []

    def lookup() -> None:
        try:
            socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            failure.append(exc)

    worker = threading.Thread(target=lookup, name=f"resolve {host}", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise ConnectionFailed(
            f"the name {host} was not resolved within {timeout_s:g} s.",
            hint="Check the host name and the machine's DNS servers (/etc/resolv.conf), or give an IP address; "
            "connect_timeout_s sets the wait.",
        )
    if failure:
        raise ConnectionFailed(
            f"the name {host} does not resolve ({failure[0]}).",
            hint="Check the host name in the URL, and the machine's DNS servers, or give an IP address.",
        )


# Their catalog -------------------------------------------------------------------------------------------


def read_inspected(engine: ServerEngine, source: CatalogSource, server: SQLAlchemyEngine) -> Catalog:
    """Through SQLAlchemy's inspector, which knows each server's catalog views, schema by schema: the search
    path's schemas first, their tables by plain name; other readable schemas' tables as `schema.table`."""
    import sqlalchemy as sa

    # A session first: a server that cannot be reached is told as such (the inspector connects on its own,
    # and would raise the driver's error untranslated).
    with source.session(read_timeout(source)) as cursor:
        path, others = read_schemas(engine, cursor, source.schemas)
        inherits = engine.table_parents(cursor)
    inspector = sa.inspect(server)
    tables: dict[str, Table] = {}
    keys: dict[tuple[str | None, str], str] = {}  # (schema, name) -> the catalog's name for it
    for position, schema in enumerate([*path, *others]):
        deadline.check("reading the schema")
        _read_schema(server, inspector, schema, position < len(path), tables, keys)
    # A child names its parent by schema and name too; a parent the catalog does not hold is not readable.
    for schema, name, parent_schema, parent in inherits:
        child, parent_key = keys.get((schema, name)), keys.get((parent_schema, parent))
        if child is not None and parent_key is not None:
            tables[child].parents.append(parent_key)
    # A foreign key names its target by schema and name: the catalog's name for it is known only now.
    for table in tables.values():
        for fk in table.foreign_keys:
            schema, _, name = fk.ref_table.partition("\0")
            fk.ref_table = keys.get((schema or None, name)) or keys.get((None, name)) or name
    return Catalog(tables=dict(sorted(tables.items(), key=path_first)), dialect=source.dialect)


def _read_schema(
    server: SQLAlchemyEngine,
    inspector: Any,
    schema: str | None,
    on_path: bool,
    tables: dict[str, Table],
    keys: dict[tuple[str | None, str], str],
) -> None:
    from sqlalchemy.engine.reflection import ObjectKind

    kinds = {name: "table" for name in inspector.get_table_names(schema=schema)}
    kinds.update({name: "view" for name in inspector.get_view_names(schema=schema)})
    if not kinds:
        return
    columns = inspector.get_multi_columns(schema=schema, kind=ObjectKind.ANY)
    pks = inspector.get_multi_pk_constraint(schema=schema)
    fks = inspector.get_multi_foreign_keys(schema=schema)
    comments = inspector.get_multi_table_comment(schema=schema) if server.dialect.supports_comments else {}
    for (_, name), cols in columns.items():
        if name not in kinds:
            continue
        # A table shadowed on the search path by one of the same name is named with its schema.
        plain = on_path and name not in tables
        key = name if plain else f"{schema}.{name}"
        keys[(schema, name)] = key
        if plain:
            keys.setdefault((None, name), key)
        pk_info: dict[str, Any] = dict(pks.get((schema, name)) or {})
        pk = list(pk_info.get("constrained_columns") or [])
        tables[key] = Table(
            name=key,
            columns=[
                Column(
                    name=c["name"],
                    type=_type_name(c["type"]),
                    nullable=bool(c.get("nullable", True)),
                    primary_key=c["name"] in pk,
                    description=(c.get("comment") or "").strip(),
                )
                for c in cols
            ],
            primary_key=pk,
            foreign_keys=[
                ForeignKey(
                    list(fk["constrained_columns"]),
                    # Resolved once every schema is read; no schema means one on the search path.
                    f"{fk.get('referred_schema') or ''}\0{fk['referred_table']}",
                    list(fk["referred_columns"]),
                )
                for fk in fks.get((schema, name), [])
                if fk.get("referred_table")
            ],
            description=str(dict(comments.get((schema, name)) or {}).get("text") or "").strip(),
            kind=kinds[name],
            # Plain names resolve on the search path, as before schemas were read: no schema pins them.
            schema=None if plain else schema,
            local_name=None if plain else name,
        )


def _type_name(sa_type: Any) -> str:
    try:
        return str(sa_type)
    except Exception:  # some reflected types cannot compile without a dialect
        return type(sa_type).__name__.upper()
