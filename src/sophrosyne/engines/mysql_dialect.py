"""sqlglot's MySQL dialect, which Sophrosyne also writes MariaDB's SQL with, made to write REGEXP as MariaDB reads it.

sqlglot writes `a REGEXP b` as REGEXP_LIKE(a, b), a function MySQL 8 has and MariaDB does not, so every REGEXP
failed on MariaDB. Both have the REGEXP operator, with the same meaning. sqlglot's compiled generator cannot
be subclassed (sqlglotc), so its table of how each node is written gets this one entry when the engines load.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot import generator as sqlglot_generator
from sqlglot.generators.mysql import MySQLGenerator


def _regexp_sql(generator: Any, expression: exp.RegexpLike) -> str:
    if expression.args.get("flag") is not None:
        # The REGEXP operator takes no flags: REGEXP_LIKE(a, b, flags) stays as written (MySQL 8 only).
        return str(generator.function_fallback_sql(expression))
    return str(generator.binary(expression, "REGEXP"))


def write_regexp_as_operator() -> None:
    """Make sqlglot's `mysql` dialect write REGEXP_LIKE(a, b) as `a REGEXP b` (idempotent)."""
    MySQLGenerator.TRANSFORMS[exp.RegexpLike] = _regexp_sql
    # sqlglot builds each generator's dispatch table from TRANSFORMS once: one built already is built again.
    cache = getattr(sqlglot_generator, "_DISPATCH_CACHE", None)
    if isinstance(cache, dict):
        cache.pop(MySQLGenerator, None)


write_regexp_as_operator()
