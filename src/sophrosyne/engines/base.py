"""What sets one database engine apart: the record every engine fills in (one module per engine: sqlite.py,
duckdb.py, postgres.py, mysql.py; servers.py for what the engines behind a URL share)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from sophrosyne.errors import ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine as SQLAlchemyEngine

    from sophrosyne.schema.catalog import Catalog


Row = Sequence[Any]
# Seconds a server connection may take to open before the server is called unreachable.
CONNECT_TIMEOUT_S = 5
# Seconds a new SQLite connection waits for a writer's lock before the file is called locked.
OPEN_WAIT_S = 1.0


class Cursor(Protocol):
    """The part of a DB-API cursor that sessions use (DuckDB's connection is one too)."""

    @property
    def description(self) -> Sequence[Sequence[Any]] | None: ...
    def execute(self, sql: str, /) -> Any: ...
    def fetchone(self) -> Row | None: ...
    def fetchmany(self, size: int, /) -> Sequence[Row]: ...
    def fetchall(self) -> Sequence[Row]: ...


@dataclass(frozen=True)
class CatalogSource:
    """What an engine reads its catalog through, given by the database it belongs to (see catalogs.py)."""

    # A cursor in a read-only session with this statement timeout, the engine's errors translated.
    session: Callable[[float], AbstractContextManager[Cursor]]
    # One statement run as a call runs it, its first row at most: the bounded row counts.
    run: Callable[[str], Sequence[Row]]
    dialect: str
    timeout_s: float  # the settings' statement timeout
    schemas: str | None  # the `schemas` setting: which schemas are read
    exact_count_rows: int  # the bound of a row count where the engine keeps no estimate
    # A server's SQLAlchemy engine, whose inspector knows its catalog views; None for a file.
    server: SQLAlchemyEngine | None = None


class Engine:
    """What sets one database engine apart, the way sqlglot gives each dialect one class.

    The guard and the policy also check SQL written for sqlglot dialects Sophrosyne does not run on: such a
    dialect gets an instance of this base class, whose defaults are the cautious ones.
    """

    name: str = ""
    # Other names of the same engine: SQLAlchemy backends and URL schemes.
    aliases: ClassVar[tuple[str, ...]] = ()
    # The schema a table name may be qualified with while still naming the catalog's table.
    default_schema: ClassVar[str | None] = None
    # How a name in a CTE body resolves, where engines differ (probed in tests/security/test_sec_scoping.py).
    # A reference the rewrite cannot resolve as the engine does is secured as a table when that is safe, and
    # refused when the engines of one record disagree (`None` below).
    # Whether a CTE body sees every CTE of its WITH, itself and later ones included, RECURSIVE or not (SQLite).
    ctes_see_later_siblings: ClassVar[bool] = False
    # Whether a CTE body of a WITH RECURSIVE sees the CTEs defined after it; None: engines of the record differ.
    recursive_ctes_see_later_siblings: ClassVar[bool | None] = False
    # Whether, in `WITH RECURSIVE t AS (anchor UNION term)`, the anchor's `t` is the CTE itself (the engine then
    # refuses or recurses as written) rather than the base table (DuckDB, and the default: secured).
    anchor_sees_recursive_cte: ClassVar[bool] = False
    # Whether the CTE bodies of a WITH inside a subquery (not itself a CTE's body) see the CTEs of the WITHs
    # around it; where not, the role's CTEs are repeated in that WITH and a reference to an outer CTE is refused.
    nested_ctes_see_outer_ctes: ClassVar[bool] = True
    # Whether a nested WITH may define a CTE named like one already in scope, and the engine read the inner one.
    redefines_ctes_consistently: ClassVar[bool] = True
    # Whether engines of the record differ on the case of CTE names, so that a reference matching a CTE in
    # scope only when case is ignored is refused.
    cte_name_case_varies: ClassVar[bool] = False
    # A role's filtered CTE must run before the query's own predicates (see policy/rewrite.py): MATERIALIZED
    # fences it where the engine honours that, a LIMIT stops merging and predicate push-down elsewhere.
    fence_materialized: ClassVar[bool] = False
    fence_limit: ClassVar[str | None] = None
    # Whether comparisons, IN lists, BETWEEN, LIKE and CASE never fail on a column's value, so that a query
    # made of them may leave its filtered CTEs unfenced (see policy/fence.py). DuckDB, for one, casts a text
    # column to a number to compare it with one (`name = 5`) and fails on the rows that do not convert.
    compares_without_failing: ClassVar[bool] = False
    # Whether a CTE left unfenced (its query cannot leak, see policy/fence.py) is marked NOT MATERIALIZED,
    # so that the engine merges it even when the query reads it twice.
    inline_unfenced: ClassVar[bool] = False
    # Whether `GROUP BY t.pk` lets other columns of `t` be selected only when `t` is a base table (PostgreSQL's
    # functional dependency), so that a role's CTE for `t` needs them grouped too.
    groups_by_key_on_base_tables_only: ClassVar[bool] = False
    # Whether an unaliased computed column is named by its SQL text (so a rewrite must not change that text).
    names_columns_by_text: ClassVar[bool] = False
    # Whether it is named by the engine's own rendering of the expression instead (see policy/headers.py).
    names_columns_by_rendering: ClassVar[bool] = False
    # Whether inner joins of fenced CTEs are pinned to the written order (see Rewriter._join_in_written_order).
    joins_fences_in_written_order: ClassVar[bool] = False
    # The statement prefix that asks for a plan, and a plan line naming a table read whole.
    explain: ClassVar[str] = "EXPLAIN"
    full_scan: ClassVar[re.Pattern[str] | None] = None
    # Case-insensitive substring search: ILIKE where there is one, else LIKE where it ignores ASCII case.
    has_ilike: ClassVar[bool] = False
    like_ignores_ascii_case: ClassVar[bool] = False
    # Whether a table name that looks like a file is read as that file (DuckDB's replacement scans).
    reads_file_names: ClassVar[bool] = True
    # Whether a row estimate of 0 may only mean "not counted yet" (InnoDB statistics).
    zero_estimate_unknown: ClassVar[bool] = False
    # Whether a statement that fails leaves its session usable, so that the catalog's bounded row counts run
    # one after another in one session (SQLite); where a failure aborts the transaction (PostgreSQL, DuckDB),
    # each count has a session of its own.
    counts_in_one_session: ClassVar[bool] = False
    # How the values of a tool declared in a policy file reach the driver, which binds them (sql/secure.py):
    # "named" (`:name`) or "pyformat" (`%(name)s`); None where declared tools are not supported yet.
    parameter_style: ClassVar[str | None] = None

    def __init__(self, name: str | None = None) -> None:
        if name is not None:
            self.name = name

    def __repr__(self) -> str:
        return f"<engine {self.name}>"

    @contextmanager
    def session(self, raw: Any, timeout_s: float, *, fenced: bool = False) -> Iterator[Cursor]:
        """A cursor inside a read-only transaction with a statement deadline; always rolled back.

        `fenced`: the statement joins fenced CTEs of a role (see policy/rewrite.py), which have no indexes
        or column statistics; engines whose planner then picks quadratic nested loops are steered off them.
        """
        raise ConfigError(f"Sophrosyne does not run on {self.name} databases.")
        yield  # pragma: no cover - makes this a generator

    @contextmanager
    def reading(
        self, cursor: Cursor, sql: str, deadline: float, values: Mapping[str, Any] | None = None
    ) -> Iterator[Cursor]:
        """Run `sql` in the session of `cursor`; the cursor its rows are then read from, as few at a time as
        asked (see reading.py). By default the session's own cursor, whose driver steps the statement as rows
        are fetched (SQLite, DuckDB). `deadline`: time.monotonic() by which the statement must be done.
        `values`: the parameters of `sql` (in `parameter_style`), which the driver binds."""
        if values is None:
            cursor.execute(sql)
        else:
            cursor.execute(sql, values)  # type: ignore[call-arg]  # a DB-API cursor's second argument
        yield cursor

    def bind_value(self, value: Any) -> Any:
        """A declared tool's value as this engine's driver binds it."""
        return value

    def interrupt(self, raw: Any) -> None:
        """Stop the statement running on connection `raw` (called from another thread); by default, nothing."""

    def read_plan(self, columns: list[str], rows: Sequence[Row]) -> tuple[list[str], set[str]]:
        """The plan as lines of text, and the (lower-cased) tables it reads whole."""
        lines = [" ".join(str(v) for v in row if v is not None) for row in rows]
        pattern = self.full_scan
        scanned = {m.lower() for line in lines for m in pattern.findall(line)} if pattern else set()
        return lines, scanned

    def row_estimates(self, cursor: Cursor) -> dict[str, int]:
        """Row counts from the engine's statistics, by table; tables without any are left out."""
        return {}

    def index_leads(self, cursor: Cursor) -> list[tuple[str, str]] | None:
        """(table, column) for the first column of every index, primary keys included: the columns an
        equality or range can seek on. None where unknown (DuckDB scans by zone maps): no index hints there."""
        return None

    def schemas(self, cursor: Cursor) -> tuple[list[str | None], list[str]]:
        """The schemas on the search path (their tables go by plain name), then the other readable ones."""
        return [None], []

    def schema_fingerprint(self, cursor: Cursor, schemas: str | None) -> object:
        """Something cheap to read that changes whenever a table or column is added, dropped or changed in
        the schemas the catalog reads (`schemas`: the setting of that name), and in no other."""
        return None

    def table_parents(self, cursor: Cursor) -> list[tuple[str, str, str, str]]:
        """(schema, table, parent schema, parent table) for each table that inherits from another (whose
        rows the parent's reads return): partitions and inheritance children. None on most engines."""
        return []

    def read_tables(self, source: CatalogSource) -> Catalog:
        """Tables, views, columns, keys and comments (row estimates are filled in by catalogs.py)."""
        raise ConfigError(f"Sophrosyne does not run on {self.name} databases.")


class FileEngine(Engine, ABC):
    """An engine over one local file, reached through its own DB-API driver (no SQLAlchemy: it starts fast)."""

    file_suffixes: ClassVar[tuple[str, ...]] = ()
    driver: ClassVar[str] = ""
    reads_file_names = False
    # Seconds an idle connection is kept for the next call; None keeps it while the database is served.
    idle_close_s: ClassVar[float | None] = None

    @abstractmethod
    def connect(self, path: Path) -> Any:
        """A new read-only connection to the file, usable from any thread (one at a time)."""

    @abstractmethod
    def error(self) -> type[Exception]:
        """The driver's base error class."""

    def probe(self, raw: Any) -> None:
        """Read something from a new connection, so a file that is no database fails here, not later."""
