"""Server facts a restricted role may not learn (version, host, paths, settings, the session's user), where no
function name shows them: `sql/functions.py` refuses the functions by name (tier 2, `version()`); this module
the rest. The role's rewrite (`policy/rewrite.py`) refuses both the same way; an unrestricted role reads them.

- a variable: `@@version`, `@@global.datadir`, `@@hostname` (MySQL, MariaDB; sqlglot reads some as `@` twice
  and writes `@ @version` back as `@@version`); on MySQL any `@x`, as a user variable is never set here;
- a word an engine reads as a function when written bare and unquoted (`SELECT user` on PostgreSQL and
  DuckDB): quoted (`"user"`), it is a column everywhere;
- a function whose value carries a server fact on one engine only (MariaDB's `UUID()` ends with a MAC address).

Roads that also reach credentials are refused to every role by the guard instead (`current_setting` on
DuckDB, `getenv`, `duckdb_settings()` in FROM), and settings tables (`pg_settings`,
`information_schema.global_variables`) are system tables, which a restricted role reads as missing.
"""

from __future__ import annotations

from sqlglot import exp

from sophrosyne.sql.functions import names

_SETTING = "a variable reads the settings of the server or the session (its version, host, paths, ports, logs)"
_IDENTITY = "it tells the server's user, role, database or schema"
_MAC = "its last part is the server's network (MAC) address"
_HINT = "a restricted role reads the data of its tables only, not facts about the server"
# Spark 3.4+ reads these bare as functions (its grammar's `currentLike`).
_SPARK_WORDS = frozenset({"user", "current_user", "session_user"})
FACT_WORDS: dict[str, frozenset[str]] = {
    "postgres": frozenset({
        "user", "current_user", "session_user", "system_user", "current_role", "current_catalog", "current_schema",
    }),
    "duckdb": frozenset({"user", "current_user", "session_user", "current_role", "current_catalog", "current_schema"}),
    "mysql": frozenset({"current_user", "current_role"}),
    "spark": _SPARK_WORDS, "spark2": _SPARK_WORDS, "databricks": _SPARK_WORDS, "hive": _SPARK_WORDS,
}  # fmt: skip
FACT_TYPES: dict[str, dict[type[exp.Func], str]] = {"mysql": {exp.Uuid: _MAC}}


def server_fact(node: exp.Expr, dialect: str) -> tuple[str, str, str] | None:
    """The server fact `node` reads on `dialect` that a restricted role may not, as (what, why, hint), or None.

    Functions by name are tier 2 (`refused_for_restricted`); this adds what no function name shows."""
    if _variable(node, dialect):
        return node.sql(dialect=dialect), _SETTING, _HINT
    if _bare_word(node, dialect):
        quoted = exp.to_identifier(node.name, quoted=True).sql(dialect=dialect)
        return node.name, _IDENTITY, f"to read a column of that name, quote it: {quoted}"
    for kind, why in FACT_TYPES.get(dialect, {}).items():
        if isinstance(node, kind):
            return f"{names(node)[0]}()", why, _HINT
    return None


def _variable(node: exp.Expr, dialect: str) -> bool:
    if not isinstance(node, exp.SessionParameter | exp.Parameter) or isinstance(node.parent, exp.Parameter):
        return False  # the outer `@` of `@ @x` is the one said
    # sqlglot reads `@@x` as a parameter of a parameter on some engines (SQLite), and writes it back as `@@x`.
    return isinstance(node, exp.SessionParameter) or dialect == "mysql" or isinstance(node.this, exp.Parameter)


def _bare_word(node: exp.Expr, dialect: str) -> bool:
    return (
        isinstance(node, exp.Column)
        and not node.table
        and isinstance(node.this, exp.Identifier)
        and not node.this.quoted
        and node.name.lower() in FACT_WORDS.get(dialect, ())
    )
