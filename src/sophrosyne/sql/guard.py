"""Read-only SQL validation on the sqlglot AST: one query, read-only node types only, no dangerous functions."""

from __future__ import annotations

import contextvars
import difflib
import logging
import re
from functools import lru_cache

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from sophrosyne import engines
from sophrosyne.engines import Engine
from sophrosyne.errors import ConfigError, RejectedSQL, SQLSyntaxError
from sophrosyne.sql import dialects, shape, sizes
from sophrosyne.sql import functions as sql_functions
from sophrosyne.sql.rendering import ARGUMENT_ERRORS, arguments_error, raised_by_sqlglot
from sophrosyne.sql.rendering import shown as _shown

__all__ = ["check_sent", "check_sql"]

_READ_ONLY = "only read-only queries (SELECT, WITH ... SELECT, set operations) run here."
# The words a read-only query starts with, for a misspelt first word.
_QUERY_STARTS = ("SELECT", "WITH", "VALUES")
_HINT_QUERY = "Send exactly one SELECT (optionally with WITH, UNION, INTERSECT or EXCEPT) that only reads."
_HINT_FUNCTION = (
    "Use ordinary SQL functions on this database's tables; "
    "file, network, admin and side-effecting functions are blocked."
)
_HINT_UNLISTED = (
    "Use standard SQL (CASE, CAST, arithmetic) and the built-in functions of this database; the functions "
    "allowed by name are listed per engine in sophrosyne/sql/functions.py (ANONYMOUS_ALLOWED)."
)
_HINT_TABLE = "Query the database's own tables; list_tables and describe_table show what exists."

# Allow-list, so that any syntax sqlglot learns later is refused until someone looks at it.
# Func, Binary, Unary, Predicate and Condition cover functions, operators, columns and literals;
# functions are then checked by name.
_ALLOWED = (
    exp.Func, exp.Binary, exp.Unary, exp.Predicate, exp.Condition,
    exp.Select, exp.SetOperation, exp.Subquery, exp.With, exp.CTE, exp.RecursiveWithSearch,
    exp.From, exp.Join, exp.Lateral, exp.Table, exp.TableAlias, exp.TableSample, exp.Values, exp.Tuple,
    exp.Where, exp.Group, exp.GroupingSets, exp.Rollup, exp.Cube, exp.Having, exp.Qualify,
    exp.Order, exp.Ordered, exp.Limit, exp.LimitOptions, exp.Offset, exp.Fetch, exp.Distinct,
    exp.WindowSpec, exp.Filter, exp.WithinGroup, exp.IgnoreNulls, exp.RespectNulls, exp.HavingMax,
    exp.Alias, exp.Aliases, exp.Identifier, exp.Star, exp.Var, exp.DataType, exp.DataTypeParam,
    exp.ColumnDef, exp.Interval, exp.Lambda, exp.Slice, exp.Comprehension, exp.Introducer, exp.National,
    exp.AtTimeZone, exp.FromTimeZone, exp.OnCondition, exp.FormatJson,
    exp.JSONPath, exp.JSONPathPart, exp.JSONColumnDef, exp.JSONSchema, exp.JSONKeyValue, exp.JSONValue,
    exp.TableFromRows, exp.Pivot, exp.PivotAlias, exp.PivotAny, exp.UnpivotColumns, exp.MatchRecognize,
    exp.MatchRecognizeMeasure, exp.IndexTableHint, exp.WithTableHint, exp.PositionalColumn,
)  # fmt: skip

# Names for the refusal message; anything else refused is named by its sqlglot type.
_LABELS: dict[type[exp.Expr], str] = {
    exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE", exp.Merge: "MERGE",
    exp.Create: "CREATE", exp.Drop: "DROP", exp.Alter: "ALTER", exp.TruncateTable: "TRUNCATE",
    exp.Copy: "COPY", exp.LoadData: "LOAD DATA", exp.Export: "EXPORT", exp.Pragma: "PRAGMA",
    exp.Attach: "ATTACH", exp.Detach: "DETACH", exp.Install: "INSTALL", exp.Transaction: "BEGIN",
    exp.Commit: "COMMIT", exp.Rollback: "ROLLBACK", exp.Set: "SET", exp.Use: "USE", exp.Grant: "GRANT",
    exp.Revoke: "REVOKE", exp.Analyze: "ANALYZE", exp.Describe: "DESCRIBE", exp.Show: "SHOW",
    exp.Summarize: "SUMMARIZE", exp.Kill: "KILL", exp.Comment: "COMMENT ON", exp.Into: "SELECT ... INTO",
    exp.Values: "VALUES", exp.Pivot: "PIVOT", exp.Refresh: "REFRESH", exp.Cache: "CACHE",
    exp.Declare: "DECLARE", exp.Execute: "EXECUTE", exp.Hint: "optimizer hint /*+ ... */",
}  # fmt: skip

# DuckDB turns an unknown table name that looks like a file or URL into a file scan ("replacement scan").
_FILE_SUFFIX = re.compile(r"\.(csv|tsv|txt|parquet|json|jsonl|ndjson|xlsx|arrow|avro|db|sqlite|duckdb|gz|zst)$", re.I)
_PATH_CHARS = re.compile(r"[/\\:*?~]")
# A name written as a path or a URL: absolute, home-relative, relative to here, a drive, a scheme.
_PATH_START = re.compile(r"^(?:[/\\~]|\.\.?[/\\]|[A-Za-z]:[/\\]|\w+://)")
_TOKEN_REPR = re.compile(r"<Token token_type: [^,]*, text: (.*?), line: \d+, col: \d+, start: \d+, end: \d+.*?>")
_TOKEN_ERROR_AT = re.compile(r"from \d+:(\d+)$")

# sqlglot logs a warning whenever it falls back to exp.Command; the guard refuses those anyway,
# so it silences that logger while it parses, without touching other threads or callers.
_parsing = contextvars.ContextVar("sophrosyne_guard_parsing", default=False)


class _QuietWhileGuarding(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _parsing.get()


logging.getLogger("sqlglot").addFilter(_QuietWhileGuarding())


def check_sql(
    sql: str, dialect: str, limits: shape.ShapeLimits | None = None, size_limit: int | None = None
) -> exp.Expression:
    """Return the parsed statement if `sql` is exactly one read-only query within the shape `limits` and
    whose function calls ask for widths, lengths, counts and precisions of at most `size_limit`, each and
    together (the settings' defaults when None), else raise.

    Raises `RejectedSQL` for anything that is not a single read-only query and `SQLSyntaxError`
    when the text does not parse.
    """
    engine = engines.for_dialect(dialect)
    parser = _dialect(engine.name)
    limits = limits or shape.ShapeLimits.defaults()
    if "\x00" in sql:
        # Engines disagree on where a NUL ends the text (MySQL ends a comment there), so refuse it.
        raise RejectedSQL("The SQL contains a NUL character.", hint="Remove the NUL (\\x00) character.")
    if "${" in sql and dialects.substitutes_variables(engine.name):
        # Spark substitutes the text itself, in strings and comments too, before it parses it.
        raise RejectedSQL(
            f"`${{...}}` is not allowed on {engine.name}: the engine replaces it in the SQL text with a setting, "
            "a JVM property or an environment variable of the server (`${env:NAME}`) before the query runs.",
            hint="Remove `${`: write the value itself (a `$` followed by another character is fine).",
        )
    tokens, statements = _parse(sql, parser, limits)
    _check_comments(tokens)
    # sqlglot yields None for an empty statement (`;;`) and Semicolon for a comment after the last `;`.
    present = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    if not present:
        raise RejectedSQL("The SQL is empty: there is no statement to run.", hint=_HINT_QUERY)
    if len(present) > 1:
        raise RejectedSQL(
            f"{len(present)} statements were sent: only one statement may run per call.",
            hint="Send one query at a time, without a semicolon between statements.",
        )
    root = present[0]
    if not isinstance(root, (exp.Select, exp.SetOperation, exp.Subquery)):
        first_word = next(token.text for token in tokens if token.text != ";")
        label = _label(root) if type(root) in _LABELS or isinstance(root, exp.Command) else first_word
        raise RejectedSQL(f"`{_shown(label.upper())}` is not allowed: {_READ_ONLY}", hint=_HINT_QUERY)
    shape.check_tree(root, limits)
    budget = sizes.SizeBudget(size_limit or sizes.DEFAULT_LIMIT)
    for node in root.walk():
        _check_node(node, engine, budget)
        # The parser's positions of names served the errors above; a role's rewrite copies the tree, and
        # copying them was half of that copy's time.
        node._meta = None
    return root


def check_sent(sql: str, dialect: str) -> None:
    """Refuse the text about to be sent where the engine would substitute `${...}` in it first (Spark): the
    rewrite writes names from the catalog, and a table or column may be named so."""
    if "${" in sql and dialects.substitutes_variables(engines.for_dialect(dialect).name):
        raise RejectedSQL(
            f"The statement as it would run on {dialect} holds `${{`, which the engine replaces with a setting or "
            "an environment variable of the server before it runs.",
            hint="Leave out the table or column whose name holds `${`.",
        )


@lru_cache(maxsize=32)
def _dialect(name: str) -> Dialect:
    try:
        return Dialect.get_or_raise(name)
    except ValueError as error:
        raise ConfigError(f"Unknown SQL dialect `{name}`.", hint="Use sqlite, duckdb, postgres or mysql.") from error


def _parse(sql: str, engine: Dialect, limits: shape.ShapeLimits) -> tuple[list[Token], list[exp.Expr | None]]:
    token = _parsing.set(True)
    tokens: list[Token] = []
    parser = engine.parser()
    try:
        tokens = engine.tokenize(sql)
        shape.check_tokens(tokens, limits)
        return tokens, parser.parse(tokens, sql)
    except ParseError as error:
        raise (_unknown_first_word(tokens) or syntax_error(error)) from None
    except TokenError as error:
        raise _token_error(sql, error) from None
    except SqlglotError as error:
        raise SQLSyntaxError(f"The SQL could not be parsed: {error}", hint=_HINT_QUERY) from None
    except ARGUMENT_ERRORS as error:
        # sqlglot builds a function's node from its arguments as they come: too few or of a kind it does not
        # expect (`DATE_ADD(1)` on MySQL, `AND(*)` on Spark) fails in Python, not as a parse error.
        if not raised_by_sqlglot(error):
            raise
        raise arguments_error(tokens, parser._index, type(engine).__name__) from None
    except RecursionError:
        # Nesting the token count does not see (NOT NOT ..., - - ...) still overflows the recursive parser.
        raise shape.too_deep(limits) from None
    except IndexError:
        # sqlglot's parser runs off the end of a statement it half knows (`SHOW ALL` on DuckDB, which lists the
        # settings): a statement that is no query is refused as one, anything else as text that does not parse.
        first = next((token.text for token in tokens if token.text != ";"), "")
        if first.upper() not in (*_QUERY_STARTS, "(", "FROM"):
            raise RejectedSQL(f"`{_shown(first.upper())}` is not allowed: {_READ_ONLY}", hint=_HINT_QUERY) from None
        raise SQLSyntaxError("The SQL could not be parsed.", hint=_HINT_QUERY) from None
    finally:
        _parsing.reset(token)


_INTERNAL_CLASS = re.compile(r"(?:Required keyword: '\w+' missing)? for <class '(?:[\w.]+\.)?(\w+)'>")


def _unknown_first_word(tokens: list[Token]) -> SQLSyntaxError | None:
    """A statement whose first word misspells SELECT, WITH or VALUES (`SELEC * FROM t`): said so, rather than
    what the parser made of the rest (`SELEC * FROM` reads as a multiplication missing its right side)."""
    first = tokens[0] if tokens else None
    if first is None or first.token_type != TokenType.VAR:
        return None
    close = difflib.get_close_matches(first.text.upper(), _QUERY_STARTS, n=1, cutoff=0.6)
    if not close:
        return None  # a word of another statement (START, SET): the parser's own error says where it fails
    column = first.col - len(first.text) + 1
    return SQLSyntaxError(
        f"Syntax error at line {first.line}, column {column}: the statement starts with `{_shown(first.text)}`, "
        f"which is not an SQL keyword: did you mean {close[0]}?",
        hint=_HINT_QUERY,
        line=first.line,
        column=column,
    )


def syntax_error(error: ParseError) -> SQLSyntaxError:
    """sqlglot's parse error in words: where, near what, and which clause is incomplete (no class names)."""
    first = error.errors[0] if error.errors else {}
    line, end_col = first.get("line"), first.get("col")
    near = str(first.get("highlight") or "")
    description = _TOKEN_REPR.sub(lambda m: f"`{m.group(1)}`", str(first.get("description") or error))
    # sqlglot names its own classes ("... missing for <class 'sqlglot...Where'>"): say the clause instead.
    description = _INTERNAL_CLASS.sub(lambda m: f"the {m.group(1).upper()} clause is incomplete", description)
    # sqlglot points at the last character of the offending token; readers expect its first.
    column = end_col - len(near) + 1 if isinstance(end_col, int) and near and "\n" not in near else end_col
    where = f" at line {line}, column {column}" if line is not None else ""
    shown = f" near `{_shown(near)}`" if near else ""
    return SQLSyntaxError(
        f"Syntax error{where}{shown}: {description}.",
        hint="Fix the SQL at that position; send one read-only query written for this database's dialect.",
        line=line,
        column=column,
    )


def _token_error(sql: str, error: TokenError) -> SQLSyntaxError:
    # The inner error names the offset where an unterminated string or comment starts. Compiled sqlglot
    # (sqlglotc) keeps it as the context only: its `raise ... from` sets no cause.
    match = _TOKEN_ERROR_AT.search(str(error.__cause__ or error.__context__ or ""))
    line = column = None
    if match and int(match.group(1)) <= len(sql):
        before = sql[: int(match.group(1))]
        line, column = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
    where = f" at line {line}, column {column}" if line is not None else ""
    return SQLSyntaxError(
        f"The SQL could not be tokenized{where}: a string, quoted name or comment is not closed.",
        hint="Close every quote and comment.",
        line=line,
        column=column,
    )


def _check_comments(tokens: list[Token]) -> None:
    # MySQL and MariaDB execute `/*! ... */` and `/*M! ... */`; sqlglot keeps them as comments.
    for token in tokens:
        for comment in token.comments:
            if comment.startswith(("!", "M!", "m!")):
                raise RejectedSQL(
                    "Executable comments (`/*! ... */`) are not allowed: MySQL runs their content as SQL.",
                    hint="Remove the comment, or write its SQL as ordinary SQL.",
                )


def _check_node(node: exp.Expr, engine: Engine, budget: sizes.SizeBudget) -> None:
    if isinstance(node, exp.Lock):
        raise RejectedSQL(
            f"The locking clause `FOR {'UPDATE' if node.args.get('update') else 'SHARE'}` is not allowed: {_READ_ONLY}",
            hint="Remove the FOR UPDATE / FOR SHARE clause.",
        )
    if not isinstance(node, _ALLOWED):
        raise RejectedSQL(f"`{_label(node)}` is not allowed: {_READ_ONLY}", hint=_HINT_QUERY)
    if isinstance(node, exp.Func):
        _check_function(node, engine)
        budget.check(node, engine.name)
    elif isinstance(node, exp.Dot):
        _check_dot(node, engine)
    elif isinstance(node, exp.Operator):
        raise RejectedSQL(
            f"`{_shown(node.sql(dialect=engine.name))}` is not allowed: OPERATOR(...) names an operator by its "
            "schema, and an operator runs a function.",
            hint="Write the operator itself (=, +, ||, ...).",
        )
    elif isinstance(node, exp.Table):
        _check_table(node, engine)
    elif isinstance(node, exp.Lateral) and isinstance(node.this, exp.Func):
        _check_table_function(node.this, engine)
    elif isinstance(node, exp.TableFromRows):
        _check_rows_source(node, engine)
    if isinstance(node, exp.Parameter | exp.SessionParameter) and dialects.substitutes_variables(engine.name):
        # sqlglot writes `@name` (and `t@v1`, `$1`) back as `${name}` there, which the engine would substitute.
        raise RejectedSQL(
            f"`{_shown(node.sql())}` is not allowed on {engine.name}: a parameter is sent as `${{...}}`, which the "
            "engine replaces with a setting, a JVM property or an environment variable of the server.",
            hint="Write the value itself; a parameter cannot be bound here.",
        )
    if isinstance(node, exp.PropertyEQ) and isinstance(node.this, (exp.Parameter, exp.SessionParameter)):
        raise RejectedSQL(
            f"Assigning a variable (`{_shown(node.sql())}`) is not allowed: queries here only read.",
            hint="Use a CTE or a subquery instead of a session variable.",
        )


def _check_function(node: exp.Func, engine: Engine) -> None:
    refused = sql_functions.refusal(node, engine.name)
    if refused:
        name, why = refused
        unlisted = why == sql_functions.UNLISTED
        raise RejectedSQL(
            f"`{_shown(name)}()` is not allowed: {why} ({engine.name}).",
            hint=_HINT_UNLISTED if unlisted else _HINT_FUNCTION,
        )
    if isinstance(node.parent, exp.Dot) and node.arg_key == "expression":
        # `pg_catalog.pg_sleep(1)`, `public.lower(x)`: a qualified name reaches any schema's functions.
        raise RejectedSQL(
            f"`{_shown(node.parent.sql(dialect=engine.name))}` is not allowed: a function is called by its "
            "plain name here, without a schema or database.",
            hint="Call the function by its plain name, e.g. lower(x).",
        )


def _check_dot(node: exp.Dot, engine: Engine) -> None:
    # PostgreSQL reads `(expression).name` as the call name(expression): `('x'::text).current_setting`.
    if dialects.reads_fields_only(engine.name):
        return  # `name[SAFE_OFFSET(0)].family`: a field of an array's element, nothing else
    if not isinstance(node.this, exp.Identifier | exp.Column | exp.Dot) and not isinstance(node.expression, exp.Func):
        for function in node.this.find_all(exp.Func):
            _check_function(function, engine)  # a refused function inside gets its own reason
        raise RejectedSQL(
            f"`{_shown(node.sql(dialect=engine.name))}` is not allowed: a field of an expression in parentheses "
            "can call a function on PostgreSQL.",
            hint="Select the column by its table or alias (`t.col`), not from a parenthesized expression.",
        )


def _check_table(table: exp.Table, engine: Engine) -> None:
    if isinstance(table.this, exp.Func):
        _check_table_function(table.this, engine)
    elif isinstance(table.this, exp.Identifier):
        parts = [part.name for part in table.parts]
        dotted = ".".join(parts)
        from_file = dialects.file_table(table, engine.name)
        if from_file:
            raise RejectedSQL(
                f"`{_shown(dotted)}` is not allowed as a table: {from_file}, and reading files is blocked.",
                hint=_HINT_TABLE,
            )
        prefix = dialects.wildcard_prefix(table, engine.name)
        if prefix is not None:
            # A wildcard table reads the tables its prefix starts; the prefix is judged as a name.
            parts[-1] = prefix
            dotted = ".".join(parts)
        # An engine that reads a file named as a table is kept from names that could be one; elsewhere a name
        # is only a name (`sales.2024`, `it's "odd"` are tables there), unless it is written like a path.
        looks_like_file = (
            any(_PATH_CHARS.search(part) for part in parts) or bool(_FILE_SUFFIX.search(dotted))
            if engine.reads_file_names
            else any(_PATH_START.match(part) for part in parts)
        )
        if looks_like_file:
            raise RejectedSQL(
                f"`{_shown(dotted)}` is not allowed as a table: it names a file or URL, and reading files is blocked.",
                hint=_HINT_TABLE,
            )
    elif table.this is not None:
        raise RejectedSQL(f"`{_shown(table.sql())}` is not allowed as a table.", hint=_HINT_TABLE)


def _check_table_function(function: exp.Func, engine: Engine) -> None:
    refused = sql_functions.never(function, engine.name)
    if refused:
        raise RejectedSQL(f"`{refused[0]}()` is not allowed: {refused[1]} ({engine.name}).", hint=_HINT_FUNCTION)
    # The guard does not know the role: the policy refuses what a restricted role may not call.
    if not sql_functions.table_function_allowed(function, restricted=False):
        allowed = ", ".join(sql_functions.table_function_names(restricted=False))
        raise RejectedSQL(
            f"The table function `{sql_functions.names(function)[0]}()` is not allowed in FROM: only {allowed} are.",
            hint=_HINT_TABLE,
        )


def _check_rows_source(node: exp.TableFromRows, engine: Engine) -> None:
    # Snowflake's `TABLE(...)`: rows from a table function (`TABLE(GENERATOR(ROWCOUNT => 7))`, `TABLE(FLATTEN(x))`);
    # `TABLE('name')` or `TABLE($1)` would read a table named by a string or a variable.
    if not isinstance(node.this, exp.Func):
        raise RejectedSQL(
            f"`{_shown(node.sql(dialect=engine.name))}` is not allowed: TABLE(...) reads rows here only from a "
            "table function, not from a table named by a string or a variable.",
            hint=_HINT_TABLE,
        )
    _check_table_function(node.this, engine)


def _label(node: exp.Expr) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return next((label for kind, label in _LABELS.items() if isinstance(node, kind)), type(node).__name__)
