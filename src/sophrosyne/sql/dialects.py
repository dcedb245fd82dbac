"""What the guard knows of the SQL of dialects beyond the engines' records: Spark's tables read from files and its
variable substitution, BigQuery's wildcard tables, and the dialects where a field of an expression is only a field.

These are facts of a dialect's SQL, whatever runs it: the guard checks Spark, Databricks, Hive, BigQuery and
Snowflake SQL by them whether or not Sophrosyne has an engine for that service.
"""

from __future__ import annotations

import re

from sqlglot import exp

__all__ = ["file_table", "reads_fields_only", "recurses_without_keyword", "substitutes_variables", "wildcard_prefix"]

# Spark, Databricks and Hive SQL share the rules below (the engines of the `spark` record answer them all).
SPARK_FAMILY = frozenset({"spark", "spark2", "databricks", "hive"})
# Where `(expression).name`, `array[0].name` only read a field of a struct: no dialect here calls a function
# that way, as PostgreSQL does (`('x'::text).current_setting`) and DuckDB (`'x'.upper()`).
_FIELDS_ONLY = frozenset({"bigquery", "snowflake", *SPARK_FAMILY})
# Spark runs ``<format>.`<path>` `` as a scan of the file or folder at the path ("SQL on files"), where no
# database of that name holds that table; the format is a data source's short name or its class name. These
# are the short names of Spark's own sources and the common packages (Delta, Iceberg, Hudi, Avro, XML, ...).
FILE_FORMATS = frozenset(
    {
        "text", "csv", "json", "parquet", "orc", "avro", "delta", "binaryfile", "jdbc", "libsvm", "image", "xml",
        "iceberg", "hudi", "kafka", "hive", "cloudfiles", "protobuf", "tfrecord", "excel", "deltasharing",
    }
)  # fmt: skip
# A name part that is a path or a URL on Spark's file systems (`/etc`, `s3a://b/k`, `C:\x`, `~/x`, `dbfs:/x`).
_PATH = re.compile(r"[/\\:~]")


def substitutes_variables(dialect: str) -> bool:
    """Whether the engine replaces `${name}` in the SQL text before it parses it: Spark does (its
    `spark.sql.variable.substitute`, on by default), with `${env:NAME}` for the server's environment variables,
    `${system:name}` for the JVM's properties and `${name}` for its settings, secrets among them; so does Hive."""
    return dialect in SPARK_FAMILY


def recurses_without_keyword(dialect: str) -> bool:
    """Whether a CTE may read itself without `WITH RECURSIVE` (Snowflake: "the keyword RECURSIVE is
    optional"; Spider 2.0's gold query sf_bq221 recurses so): the rewrite then scopes every WITH as recursive."""
    return dialect == "snowflake"


def reads_fields_only(dialect: str) -> bool:
    """Whether `(expression).name` only reads a field in this dialect (never calls a function)."""
    return dialect in _FIELDS_ONLY


def file_table(table: exp.Table, dialect: str) -> str | None:
    """Why this table would be read from a file on `dialect` (Spark SQL on files), or None."""
    if dialect not in SPARK_FAMILY or not isinstance(table.this, exp.Identifier):
        return None
    db = table.args.get("db")
    if isinstance(db, exp.Identifier) and (db.name.lower() in FILE_FORMATS or "." in db.name):
        return f"Spark reads ``{db.name}.`path` `` as the file at that path in the `{db.name}` format, not as a table"
    if any(_PATH.search(part.name) for part in table.parts):
        return "it names a file or URL, which Spark reads as a file"
    return None


def wildcard_prefix(table: exp.Table, dialect: str) -> str | None:
    """The prefix of a BigQuery wildcard table (`dataset.events_*` reads every table of the dataset whose name
    starts with `events_`; `dataset.*` every table), or None for any other table or dialect."""
    if dialect != "bigquery" or not isinstance(table.this, exp.Identifier):
        return None
    name = table.name
    if not name.endswith("*") or "*" in name[:-1]:
        return None
    return name[:-1]
