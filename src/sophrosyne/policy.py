"""Roles, row-level security and column rules, applied by rewriting base tables as filtered CTEs."""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, TypeVar

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError

from sophrosyne import sql_functions
from sophrosyne.catalog import Catalog, Column, Table
from sophrosyne.errors import ConfigError, RejectedSQL, UnknownTable

E = TypeVar("E", bound=exp.Expr)

# Schema names that reveal the database's structure; a restricted role never reads them.
_SYSTEM_SCHEMAS = {"information_schema", "pg_catalog", "pg_toast", "mysql", "performance_schema", "sys", "system"}
_SYSTEM_TABLE = re.compile(r"^(sqlite_|pg_|duckdb_|pragma_)", re.IGNORECASE)

# Dialects whose default schema name can qualify a table, and the engines where a CTE sees later siblings.
_DEFAULT_SCHEMA = {"sqlite": "main", "duckdb": "main", "postgres": "public"}
_FORWARD_CTE_REFERENCES = {"sqlite"}  # even without RECURSIVE
_FORWARD_CTE_REFERENCES_IF_RECURSIVE = {"sqlite", "postgres"}

# A filtered CTE must be evaluated before the query's own predicates: else the planner may run a predicate
# such as CAST(name AS INTEGER) = 1 on a row the filter drops, and its error (or its absence) tells about
# that row. MATERIALIZED fences PostgreSQL, DuckDB and SQLite; a LIMIT stops merging and condition
# push-down into the CTE on MySQL and MariaDB (and push-down on SQLite).
_MATERIALIZE = {"postgres", "duckdb", "sqlite"}
_LIMIT_FENCE = {"mysql": "18446744073709551615", "sqlite": "-1"}


@dataclass
class TableRule:
    """What a role may see of one table: a row filter (SQL predicate) and visible or hidden columns."""

    row_filter: str | None = None
    columns: list[str] | None = None  # visible columns; None means all
    hidden: list[str] = field(default_factory=list)


@dataclass
class Role:
    """A role's view of the database. The default role sees everything.

    A role with any rule is *restricted*: it reads only catalog tables (never system catalogs), views only
    when a rule lists them, and tables without a rule only when `unlisted_allowed` (the default).
    """

    name: str = "default"
    tables: dict[str, TableRule] = field(default_factory=dict)
    denied: list[str] = field(default_factory=list)
    unlisted_allowed: bool = True
    description: str = ""

    @property
    def unrestricted(self) -> bool:
        return not self.tables and not self.denied and self.unlisted_allowed

    def can_see_table(self, table: str) -> bool:
        """False for a denied table or, when unlisted tables are not allowed, for a table without a rule."""
        if table.lower() in {d.lower() for d in self.denied}:
            return False
        if self.unrestricted:
            return True
        if _SYSTEM_TABLE.match(table):
            return False
        return self.unlisted_allowed or self._rule(table) is not None

    def can_read(self, table: Table) -> bool:
        """Whether this role may read `table` at all (views need a rule of their own when restricted)."""
        if self.unrestricted:
            return True
        if not self.can_see_table(table.name):
            return False
        if table.kind == "view" and self._rule(table.name) is None:
            return False
        return bool(self.visible_columns(table))

    def visible_columns(self, table: Table) -> list[Column]:
        rule = self._rule(table.name)
        if rule is None:
            return list(table.columns)
        hidden = {h.lower() for h in rule.hidden}
        allowed = None if rule.columns is None else {c.lower() for c in rule.columns}
        return [
            c for c in table.columns if c.name.lower() not in hidden and (allowed is None or c.name.lower() in allowed)
        ]

    def restrict(self, catalog: Catalog) -> Catalog:
        """The catalog as this role sees it: denied tables, unlisted views and hidden columns are absent."""
        if self.unrestricted:
            return catalog
        tables: dict[str, Table] = {}
        for name, table in catalog.tables.items():
            if not self.can_read(table):
                continue
            columns = self.visible_columns(table)
            visible = {c.name for c in columns}
            tables[name] = Table(
                name=table.name,
                columns=columns,
                primary_key=[c for c in table.primary_key if c in visible],
                foreign_keys=[
                    fk
                    for fk in table.foreign_keys
                    if self.can_see_table(fk.ref_table) and all(c in visible for c in fk.columns)
                ],
                description=table.description,
                # The full table's row count would tell how many rows the filter hides.
                row_estimate=None if self._has_filter(name) else table.row_estimate,
                kind=table.kind,
                schema=table.schema,
            )
        return Catalog(tables=tables, dialect=catalog.dialect)

    def rewrite(self, expression: E, catalog: Catalog, dialect: str, *, copy: bool = True) -> E:
        """Replace each base-table reference by the role's filtered CTE. Unrestricted roles pass through.

        With `copy=False` the expression is rewritten in place (faster; the caller no longer needs it).

        Raises UnknownTable (worded as for a table that does not exist) for denied, unlisted, system and
        unknown tables, and RejectedSQL for functions a restricted role may not call.
        """
        if self.unrestricted:
            return expression
        return _Rewriter(self, catalog, dialect).rewrite(expression.copy() if copy else expression)

    def row_scope(self, table: str) -> dict[str, set[str]]:
        """Column -> allowed values implied by the table's row filter (its `col = v` / `col IN (...)` terms)."""
        rule = self._rule(table)
        if rule is None or not rule.row_filter:
            return {}
        return _scope_of(parse_row_filter(rule.row_filter, None, table))

    def filter_rows(
        self, table: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]
    ) -> list[tuple[Any, ...]]:
        """The post-execution layer: drop rows whose filter column holds a value outside the role's scope.

        Applies when the rows come from one table (`table`), and only to result columns named like a
        column of an equality or IN term of that table's row filter. It cannot check other predicates,
        renamed or computed columns, or aggregates; the rewrite is the layer that enforces those.
        """
        if table is None or self.unrestricted:
            return [tuple(r) for r in rows]
        scope = self.row_scope(table)
        positions = [(i, scope[c.lower()]) for i, c in enumerate(columns) if c.lower() in scope]
        return [tuple(r) for r in rows if all(_normalize_value(r[i]) in allowed for i, allowed in positions)]

    def scoped_table(self, expression: exp.Expr) -> str | None:
        """The table whose scope `filter_rows` may check on a query's result, or None.

        Only a plain SELECT over one table, without joins, subqueries, grouping or set operations, whose
        output columns named like a scope column are that very column, qualifies.
        """
        if not isinstance(expression, exp.Select) or expression.args.get("joins"):
            return None
        if expression.args.get("group") or expression.args.get("with_"):
            return None
        tables = list(expression.find_all(exp.Table))
        if len(tables) != 1 or len(list(expression.find_all(exp.Select))) != 1:
            return None
        name = tables[0].name
        scope = self.row_scope(name)
        for projection in expression.expressions:
            if projection.alias_or_name.lower() in scope:
                inner = projection.unalias()
                if not isinstance(inner, exp.Column) or inner.name.lower() != projection.alias_or_name.lower():
                    return None
                if inner.find(exp.AggFunc) or isinstance(projection, exp.Window):
                    return None
        return name

    def _has_filter(self, table: str) -> bool:
        rule = self._rule(table)
        return rule is not None and bool(rule.row_filter)

    def _rule(self, table: str) -> TableRule | None:
        lowered = table.lower()
        return next((r for n, r in self.tables.items() if n.lower() == lowered), None)


def _normalize_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int | float | Decimal):
        try:
            return str(Decimal(str(value)).normalize())
        except InvalidOperation:
            return str(value)
    return str(value).casefold()


def _scope_of(predicate: exp.Expr) -> dict[str, set[str]]:
    scope: dict[str, set[str]] = {}
    for term in predicate.flatten() if isinstance(predicate, exp.And) else [predicate]:
        term = term.unnest()
        if isinstance(term, exp.EQ):
            left, right = term.this, term.expression
            if isinstance(right, exp.Column) and isinstance(left, exp.Literal):
                left, right = right, left
            if isinstance(left, exp.Column) and isinstance(right, exp.Literal):
                scope.setdefault(left.name.lower(), set()).add(_literal_value(right))
        elif isinstance(term, exp.In) and isinstance(term.this, exp.Column):
            values = term.expressions
            if values and all(isinstance(v, exp.Literal) for v in values):
                scope.setdefault(term.this.name.lower(), set()).update(_literal_value(v) for v in values)
    return scope


def _literal_value(literal: exp.Literal) -> str:
    if literal.is_string:
        return _normalize_value(literal.this)
    return _normalize_value(Decimal(literal.this))


def parse_row_filter(text: str, dialect: str | None, where: str) -> exp.Expr:
    """Parse a row filter and check it is a pure predicate; ConfigError says what is wrong and where."""
    return _parse_row_filter(text, dialect, where).copy()


@functools.lru_cache(maxsize=512)
def _parse_row_filter(text: str, dialect: str | None, where: str) -> exp.Expr:
    try:
        statements = [s for s in sqlglot.parse(text, read=dialect) if s is not None]
    except (ParseError, ValueError) as error:
        raise ConfigError(f"row filter of {where} does not parse: {text!r}", hint=str(error)[:200]) from error
    predicate = statements[0] if len(statements) == 1 else exp.Block(expressions=statements)
    if (
        not isinstance(predicate, exp.Condition)
        or isinstance(predicate, exp.Query)
        or predicate.find(exp.DDL, exp.DML, exp.Command)
    ):
        raise ConfigError(f"row filter of {where} must be a predicate such as `region = 'EU'`, got {text!r}")
    for node in predicate.walk():
        if isinstance(node, exp.AggFunc | exp.Window) and node.find_ancestor(exp.Select) is None:
            raise ConfigError(f"row filter of {where} may not use aggregates or window functions")
        if isinstance(node, exp.Func) and (reason := _function_refusal(node)):
            raise ConfigError(f"row filter of {where}: {reason}")
        if isinstance(node, exp.Table) and (not isinstance(node.this, exp.Identifier) or node.args.get("db")):
            raise ConfigError(f"row filter of {where} may read only plain table names in its subqueries")
        if isinstance(node, exp.Placeholder | exp.Parameter):
            raise ConfigError(f"row filter of {where} may not contain parameters")
    return predicate


def _function_refusal(node: exp.Func) -> str | None:
    if sql_functions.refused_for_restricted(node):
        return f"function `{sql_functions.names(node)[0]}` is not allowed"
    return None


class _Rewriter:
    """One rewrite of one statement for one role."""

    def __init__(self, role: Role, catalog: Catalog, dialect: str) -> None:
        self.role = role
        self.catalog = catalog
        self.dialect = Dialect.get_or_raise(dialect)
        self.dialect_name = dialect.lower()
        self.secured: dict[str, tuple[str, Table]] = {}  # lowered table name -> (cte name, table)
        self.taken: set[str] = set()
        self.cte_refs: dict[int, list[exp.Table]] = {}  # id of a user CTE -> the references to it

    def key(self, identifier: exp.Identifier) -> str:
        """A name as the engine compares it (case rules of the dialect)."""
        fresh = exp.Identifier(this=identifier.name, quoted=identifier.quoted)
        return self.dialect.normalize_identifier(fresh).name

    def rewrite(self, tree: E) -> E:
        if not isinstance(tree, exp.Query):
            raise RejectedSQL("only a query can be rewritten for a role")
        self.taken = {n.lower() for n in _all_names(tree)}
        self._check_functions(tree)
        for node in tree.walk():
            node.comments = None  # the engine sees only what the rewrite saw
        self._walk(tree, {})
        if not self.secured:
            return tree
        self._unqualify_columns(tree)
        # `(WITH w AS (...) SELECT ...)`: merge into the parenthesized query's WITH (two would be refused).
        host: exp.Expr = tree
        while isinstance(host, exp.Subquery) and not host.alias and isinstance(host.this, exp.Query):
            if host.this.args.get("with_") is None:
                break
            host = host.this
        with_ = host.args.get("with_")
        ctes = [self._secure_cte(cte_name, table) for cte_name, table in self.secured.values()]
        if isinstance(with_, exp.With) and with_.args.get("recursive"):
            self._rename_shadowing_ctes(with_, ctes)
        if with_ is None:
            host.set("with_", exp.With(expressions=ctes))
        else:
            # Merge: our CTEs come first so every user CTE (and nested WITH) can read them.
            with_.set("expressions", ctes + list(with_.expressions))
        return tree

    def _unqualify_columns(self, tree: exp.Expr) -> None:
        """`main.employees.name` -> `employees.name`: the secured reference keeps only the table name."""
        for column in tree.find_all(exp.Column):
            db = column.args.get("db")
            if db is None or column.table.lower() not in self.secured:
                continue
            table = self.secured[column.table.lower()][1]
            if db.name.lower() in {(table.schema or "").lower(), _DEFAULT_SCHEMA.get(self.dialect_name)}:
                column.set("db", None)
                column.set("catalog", None)

    def _check_functions(self, tree: exp.Expr) -> None:
        for node in tree.walk():
            if isinstance(node, exp.Func) and (reason := _function_refusal(node)):
                raise RejectedSQL(
                    f"{reason} for role `{self.role.name}`",
                    hint="use built-in scalar and aggregate functions over the tables you can read",
                )
            if isinstance(node, exp.Cast | exp.TryCast) and _is_catalog_type(node.args.get("to")):
                raise RejectedSQL(f"casts to object identifier types are not allowed for role `{self.role.name}`")

    def _rename_shadowing_ctes(self, with_: exp.With, ours: list[exp.CTE]) -> None:
        """In a recursive WITH our CTE bodies could see a user CTE named like a base table they read:
        such a user CTE gets a fresh name (its references keep the old one as alias)."""
        read = {t.name.lower() for cte in ours for t in cte.find_all(exp.Table)}
        for cte in with_.expressions:
            name = cte.alias.lower()
            if name not in read:
                continue
            fresh, n = f"{name}_1", 1
            while fresh in self.taken:
                n += 1
                fresh = f"{name}_{n}"
            self.taken.add(fresh)
            for ref in self.cte_refs.get(id(cte), []):
                if ref.args.get("alias") is None:
                    ref.set("alias", exp.TableAlias(this=ref.this.copy()))
                ref.set("this", exp.to_identifier(fresh))
            cte.args["alias"].set("this", exp.to_identifier(fresh))

    def _walk(self, node: exp.Expr, visible: dict[str, exp.CTE]) -> None:
        with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
        if isinstance(with_, exp.With):
            ctes: list[exp.CTE] = list(with_.expressions)
            names = [self.key(cte.args["alias"].this) for cte in ctes]
            recursive = bool(with_.args.get("recursive"))
            for i, cte in enumerate(ctes):
                inner = {k: v for k, v in visible.items() if k != names[i]}
                inner.update({names[j]: ctes[j] for j in self._siblings_seen(len(ctes), i, recursive) if j != i})
                body = cte.this
                if (recursive or self.dialect_name in _FORWARD_CTE_REFERENCES) and isinstance(body, exp.Union):
                    self._walk_recursive_body(body, inner, {**inner, names[i]: cte})
                else:
                    self._walk(body, inner)
            visible = {**visible, **dict(zip(names, ctes, strict=True))}
        for child in list(node.iter_expressions()):
            if child is with_:
                continue
            if isinstance(child, exp.Table):
                self._table(child, visible)
            self._walk(child, visible)

    def _walk_recursive_body(self, body: exp.Union, inner: dict[str, exp.CTE], with_self: dict[str, exp.CTE]) -> None:
        """Only the recursive term of `anchor UNION [ALL] term` reads the CTE itself: elsewhere its name is
        the base table (DuckDB reads it there; PostgreSQL refuses it), so it is secured."""
        if body.args.get("with_") is not None:
            self._walk(body, inner)
            return
        for child in list(body.iter_expressions()):
            scope = with_self if child is body.expression else inner
            if isinstance(child, exp.Table):
                self._table(child, scope)
            self._walk(child, scope)

    def _siblings_seen(self, count: int, index: int, recursive: bool) -> range:
        """Which CTEs of one WITH a CTE body can see; fewer is safe (the rest are secured)."""
        if self.dialect_name in _FORWARD_CTE_REFERENCES or (
            recursive and self.dialect_name in _FORWARD_CTE_REFERENCES_IF_RECURSIVE
        ):
            return range(count)
        return range(index + 1 if recursive else index)

    def _table(self, node: exp.Table, visible: dict[str, exp.CTE]) -> None:
        target = node.this
        if isinstance(target, exp.Func):
            if not sql_functions.table_function_allowed(target, restricted=True):
                raise RejectedSQL(f"table function `{sql_functions.names(target)[0]}` is not allowed")
            return
        if not isinstance(target, exp.Identifier):
            raise RejectedSQL("only named tables can be read", hint="name a table from list_tables")
        db, catalog_part = node.args.get("db"), node.args.get("catalog")
        if db is None and catalog_part is None and self.key(target) in visible:
            # A CTE of the query: its body is rewritten where it is defined.
            self.cte_refs.setdefault(id(visible[self.key(target)]), []).append(node)
            return
        table = self._resolve(node)
        if table is None or not self.role.can_read(table):
            raise _unknown_table(node)
        cte_name = self._cte_name(table)
        alias = node.args.get("alias")
        if alias is None:
            node.set("alias", exp.TableAlias(this=target.copy()))
        node.set("this", exp.to_identifier(cte_name))
        node.set("db", None)
        node.set("catalog", None)

    def _resolve(self, node: exp.Table) -> Table | None:
        if node.args.get("catalog") is not None:
            return None
        if _SYSTEM_TABLE.match(node.name):
            return None
        table = self.catalog.table(node.name)
        db = node.args.get("db")
        if table is None or db is None:
            return table
        schema = db.name.lower()
        allowed = table.schema.lower() if table.schema else _DEFAULT_SCHEMA.get(self.dialect_name)
        return table if schema == allowed and schema not in _SYSTEM_SCHEMAS else None

    def _cte_name(self, table: Table) -> str:
        lowered = table.name.lower()
        if lowered in self.secured:
            return self.secured[lowered][0]
        base = "_sec_" + re.sub(r"\W", "_", lowered)
        name, n = base, 1
        while name in self.taken:
            name, n = f"{base}_{n}", n + 1
        self.taken.add(name)
        self.secured[lowered] = (name, table)
        return name

    def _secure_cte(self, cte_name: str, table: Table) -> exp.CTE:
        rule = self.role._rule(table.name)
        columns = [exp.column(c.name, quoted=True) for c in self.role.visible_columns(table)]
        body = exp.select(*columns).from_(self._base(table))
        if rule is not None and rule.row_filter:
            predicate = parse_row_filter(rule.row_filter, self.dialect_name, f"table `{table.name}`")
            for inner in predicate.find_all(exp.Table):
                inner.replace(self._base_by_name(inner))
            body = body.where(predicate)
            if self.dialect_name in _LIMIT_FENCE:
                body = body.limit(_LIMIT_FENCE[self.dialect_name])
        cte = exp.CTE(this=body, alias=exp.TableAlias(this=exp.to_identifier(cte_name)))
        if rule is not None and rule.row_filter and self.dialect_name in _MATERIALIZE:
            cte.set("materialized", True)
        return cte

    def _base(self, table: Table) -> exp.Table:
        """The base table itself. SQLite lets a CTE see later siblings, so `main.` pins the real table;
        elsewhere ours come first, and a recursive WITH has its shadowing CTEs renamed."""
        schema = table.schema or ("main" if self.dialect_name == "sqlite" else None)
        return exp.table_(table.name, db=schema, quoted=True)

    def _base_by_name(self, node: exp.Table) -> exp.Table:
        table = self.catalog.table(node.name)
        if table is None:
            raise ConfigError(f"a row filter of role `{self.role.name}` reads unknown table `{node.name}`")
        base = self._base(table)
        base.set("alias", node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name)))
        return base


def _all_names(tree: exp.Expr) -> Iterable[str]:
    for cte in tree.find_all(exp.CTE):
        yield cte.alias
    for table in tree.find_all(exp.Table):
        yield table.name


def _is_catalog_type(to: exp.Expression | None) -> bool:
    if isinstance(to, exp.ObjectIdentifier):
        return True
    return isinstance(to, exp.DataType) and to.sql().lower().startswith(("reg", "oid"))


def _unknown_table(node: exp.Table) -> UnknownTable:
    name = ".".join(p.name for p in node.parts)
    return UnknownTable(f"no table `{name}`", hint="call list_tables to see the tables you can read")


# Policy files ---------------------------------------------------------------------------------------------

_TOP_KEYS = {"default_role", "roles", "tokens"}
_ROLE_KEYS = {"description", "deny", "unlisted", "tables"}
_TABLE_KEYS = {"row_filter", "columns", "hidden"}
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


@dataclass
class Policy:
    """Roles by name, the default role, and bearer-token hashes that map to roles."""

    roles: dict[str, Role]
    default_role_name: str
    token_hashes: dict[str, str] = field(default_factory=dict)  # sha256 hex -> role name

    def role(self, name: str) -> Role:
        try:
            return self.roles[name]
        except KeyError:
            known = ", ".join(sorted(self.roles))
            raise ConfigError(f"no role `{name}` in the policy", hint=f"roles: {known}") from None

    @property
    def default_role(self) -> Role:
        return self.roles[self.default_role_name]

    def role_for_token(self, token: str) -> Role | None:
        """The role a bearer token maps to, or None. Every entry is compared, in constant time."""
        presented = hash_token(token)
        found: str | None = None
        for digest, role in self.token_hashes.items():
            if hmac.compare_digest(presented, digest):
                found = role
        return None if found is None else self.roles[found]

    def check(self, catalog: Catalog) -> None:
        """ConfigError when a rule names a table or column the database does not have."""
        for role in self.roles.values():
            for name, rule in role.tables.items():
                table = catalog.table(name)
                where = f"role `{role.name}`, table `{name}`"
                if table is None:
                    raise ConfigError(f"{where}: no such table in the database")
                for column in [*(rule.columns or []), *rule.hidden]:
                    if table.column(column) is None:
                        raise ConfigError(f"{where}: no column `{column}`")
                if rule.row_filter:
                    predicate = parse_row_filter(rule.row_filter, catalog.dialect, where)
                    for inner in predicate.find_all(exp.Table):
                        if catalog.table(inner.name) is None:
                            raise ConfigError(f"{where}: the row filter reads unknown table `{inner.name}`")
                    for col in predicate.find_all(exp.Column):
                        if col.find_ancestor(exp.Select) is None and table.column(col.name) is None:
                            raise ConfigError(f"{where}: the row filter uses unknown column `{col.name}`")


def hash_token(token: str) -> str:
    """The sha256 hex digest stored in a policy file for a bearer token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def load_policy(path: str | Path) -> Policy:
    """Read a TOML policy file; ConfigError names the file and the key that is wrong."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"policy file {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"policy file {path} is not valid TOML: {error}") from None
    try:
        return parse_policy(data)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error.message}", hint=error.hint) from None


def parse_policy(data: dict[str, Any]) -> Policy:
    """Build a Policy from parsed TOML (a dict)."""
    _only_keys(data, _TOP_KEYS, "")
    roles_data = _typed(data.get("roles", {}), dict, "roles")
    if not roles_data:
        raise ConfigError("the policy defines no role", hint="add a [roles.NAME] table")
    roles = {name: _parse_role(name, _typed(body, dict, f"roles.{name}")) for name, body in roles_data.items()}
    default = _typed(data.get("default_role", ""), str, "default_role")
    if not default:
        if len(roles) != 1:
            raise ConfigError("`default_role` is missing", hint=f"set it to one of: {', '.join(sorted(roles))}")
        default = next(iter(roles))
    if default not in roles:
        raise ConfigError(f"`default_role` names unknown role `{default}`")
    tokens: dict[str, str] = {}
    for digest, role in _typed(data.get("tokens", {}), dict, "tokens").items():
        if not _SHA256_HEX.match(digest):
            raise ConfigError(
                f"tokens: `{digest[:12]}...` is not a sha256 hex digest",
                hint="store sha256(token) in lower-case hex, never the token itself",
            )
        if _typed(role, str, f"tokens.{digest[:12]}") not in roles:
            raise ConfigError(f"tokens: a token maps to unknown role `{role}`")
        tokens[digest] = role
    return Policy(roles=roles, default_role_name=default, token_hashes=tokens)


def _parse_role(name: str, body: dict[str, Any]) -> Role:
    where = f"roles.{name}"
    _only_keys(body, _ROLE_KEYS, where)
    unlisted = _typed(body.get("unlisted", "allow"), str, f"{where}.unlisted")
    if unlisted not in ("allow", "deny"):
        raise ConfigError(f'{where}.unlisted must be "allow" or "deny", not {unlisted!r}')
    tables: dict[str, TableRule] = {}
    for table, rule in _typed(body.get("tables", {}), dict, f"{where}.tables").items():
        at = f"{where}.tables.{table}"
        rule = _typed(rule, dict, at)
        _only_keys(rule, _TABLE_KEYS, at)
        row_filter = _typed(rule.get("row_filter", ""), str, f"{at}.row_filter") or None
        if row_filter is not None:
            parse_row_filter(row_filter, None, f"`{at}`")
        columns = _names(rule["columns"], f"{at}.columns") if "columns" in rule else None
        tables[table] = TableRule(row_filter=row_filter, columns=columns, hidden=_names(rule.get("hidden", []), at))
    denied = _names(body.get("deny", []), f"{where}.deny")
    both = sorted({d.lower() for d in denied} & {t.lower() for t in tables})
    if both:
        raise ConfigError(f"{where}: `{both[0]}` is both denied and given a rule", hint="keep one of the two")
    description = _typed(body.get("description", ""), str, f"{where}.description")
    return Role(name, tables, denied, unlisted_allowed=unlisted == "allow", description=description)


def _only_keys(data: dict[str, Any], allowed: set[str], where: str) -> None:
    for key in data:
        if key not in allowed:
            at = f"{where}.{key}" if where else key
            raise ConfigError(f"unknown key `{at}`", hint=f"expected one of: {', '.join(sorted(allowed))}")


def _typed(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind):
        raise ConfigError(f"`{where}` must be a {kind.__name__}, not {type(value).__name__}")
    return value


def _names(value: Any, where: str) -> list[str]:
    items = _typed(value, list, where)
    if not all(isinstance(v, str) and v for v in items):
        raise ConfigError(f"`{where}` must be a list of names")
    return list(items)
