"""The rewrite: each base table a restricted role reads becomes a CTE of its filtered, column-restricted view."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeVar

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from sophrosyne import engines
from sophrosyne.base.text import shorten
from sophrosyne.errors import ConfigError, RejectedSQL, UnknownTable
from sophrosyne.schema.catalog import Catalog, Table
from sophrosyne.sql import dialects
from sophrosyne.sql import functions as sql_functions
from sophrosyne.sql.facts import server_fact
from sophrosyne.sql.policy.fence import needs_fence
from sophrosyne.sql.policy.headers import RENAMED, note_renamed
from sophrosyne.sql.policy.mending import complete_group_by, join_in_written_order, unqualify_columns, written_headers
from sophrosyne.sql.policy.qualified import find_table, qualified_parts
from sophrosyne.sql.policy.roles import SYSTEM_TABLE, Role
from sophrosyne.sql.policy.row_filter import function_refusal, parse_row_filter
from sophrosyne.sql.policy.view import inherited
from sophrosyne.sql.policy.wildcard import check_wildcard

E = TypeVar("E", bound=exp.Expr)

# Schema names that reveal the database's structure; a restricted role never reads them.
SYSTEM_SCHEMAS = {"information_schema", "pg_catalog", "pg_toast", "mysql", "performance_schema", "sys", "system"}
# Why a reference to a later CTE of a WITH RECURSIVE is refused where the engines of one record differ.
_LATER_SIBLING = "engines differ on whether a CTE of a WITH RECURSIVE reads the CTEs defined after it"
# The key of a rewritten tree's meta that says whether it reads fenced CTEs (see `reads_fences`).
FENCED = "sophrosyne_fenced"


class Rewriter:
    """One rewrite of one statement for one role."""

    def __init__(self, role: Role, catalog: Catalog, dialect: str) -> None:
        self.role = inherited(role, catalog)  # partitions and children follow their protected ancestors
        self.catalog = catalog
        self.engine = engines.for_dialect(dialect)
        self.dialect = Dialect.get_or_raise(self.engine.name)
        self.secured: dict[str, tuple[str, Table]] = {}  # lowered table name -> (cte name, table)
        self.taken: set[str] = set()
        self.cte_refs: dict[int, list[exp.Table]] = {}  # id of a user CTE -> the references to it
        self.host_with: exp.With | None = None  # the WITH our CTEs are merged into
        self.isolated: list[exp.With] = []  # nested WITHs whose CTE bodies cannot see ours (see _walk)
        self.fenced = True  # whether filtered CTEs are fenced: decided per statement (policy/fence.py)
        self.renamed: dict[str, str] = {}  # a reference as rewritten -> as written (see policy/headers.py)

    def key(self, identifier: exp.Identifier) -> str:
        """A name as the engine compares it (case rules of the dialect)."""
        fresh = exp.Identifier(this=identifier.name, quoted=identifier.quoted)
        return self.dialect.normalize_identifier(fresh).name

    def rewrite(self, tree: E) -> E:
        if not isinstance(tree, exp.Query):
            raise RejectedSQL("only a query can be rewritten for a role")
        self.taken = {n.lower() for n in _all_names(tree)}
        self._check_functions(tree)
        self.fenced = not self.engine.compares_without_failing or needs_fence(tree)
        headers = written_headers(tree, self.dialect) if self.engine.names_columns_by_text else []
        for node in tree.walk():
            node.comments = None  # the engine sees only what the rewrite saw
        # `(WITH w AS (...) SELECT ...)`: merge into the parenthesized query's WITH (two would be refused).
        host: exp.Expr = tree
        while isinstance(host, exp.Subquery) and not host.alias and isinstance(host.this, exp.Query):
            if host.this.args.get("with_") is None:
                break
            host = host.this
        with_ = host.args.get("with_")
        self.host_with = with_ if isinstance(with_, exp.With) else None
        self._walk(tree, {}, {})
        if not self.secured:
            return tree
        unqualify_columns(tree, self.secured, self.engine.default_schema)
        ctes = [self._secure_cte(cte_name, table) for cte_name, table in self.secured.values()]
        # Our CTE bodies must read the base tables wherever the engine resolves their names: a user CTE that
        # could capture one (a recursive WITH, our CTEs repeated in a nested WITH, MariaDB re-resolving a CTE
        # read twice from a later CTE's body) is renamed, in every WITH; its references keep the old name.
        self._rename_shadowing_ctes(list(tree.find_all(exp.With)), ctes)
        for projection, header in headers:
            if projection.sql(dialect=self.dialect) != header:
                projection.replace(exp.alias_(projection.copy(), header, quoted=True))
        for select in list(tree.find_all(exp.Select)):
            if self.engine.groups_by_key_on_base_tables_only:
                complete_group_by(select, self.secured)
            if self.fenced and self.engine.joins_fences_in_written_order:
                join_in_written_order(select, {n for n, t in self.secured.values() if self._filtered(t)})
        self._repeat_in_isolated_withs()
        if with_ is None:
            host.set("with_", exp.With(expressions=ctes))
        else:
            # Merge: our CTEs come first so every user CTE (and nested WITH) can read them.
            with_.set("expressions", ctes + list(with_.expressions))
        tree.meta[FENCED] = self.fenced and any(self._filtered(table) for _, table in self.secured.values())
        tree.meta[RENAMED] = self.renamed
        return tree

    def _filtered(self, table: Table) -> bool:
        rule = self.role._rule(table.name)
        return rule is not None and bool(rule.row_filter)

    def _check_functions(self, tree: exp.Expr) -> None:
        for node in tree.walk():
            rows = node.this if isinstance(node, exp.TableFromRows | exp.Lateral) else None
            if isinstance(rows, exp.Func) and not sql_functions.table_function_allowed(rows, restricted=True):
                raise RejectedSQL(f"table function `{sql_functions.names(rows)[0]}` is not allowed")
            if isinstance(node, exp.Func) and (refused := function_refusal(node, self.engine.name)):
                name, why = refused
                raise RejectedSQL(
                    f"function `{name}` is not allowed for role `{self.role.name}`" + (f": {why}" if why else ""),
                    hint="use built-in scalar and aggregate functions over the tables you can read",
                )
            if fact := server_fact(node, self.engine.name):  # `@@version`, a bare `user`, ...
                shown, why, hint = fact
                raise RejectedSQL(
                    f"`{shorten(shown, 60)}` is not allowed for role `{self.role.name}`: {why}", hint=hint
                )
            if isinstance(node, exp.DataType) and not sql_functions.cast_allowed(node, self.engine.name):
                # A table's row type (`NULL::salaries`) or an object identifier (`'salaries'::regclass`) would
                # name what the role may not see; the message is the same for a table that exists and one that
                # does not.
                raise RejectedSQL(
                    f"the type `{shorten(node.sql(dialect=self.dialect), 60)}` is not allowed for role "
                    f"`{self.role.name}`: only built-in scalar types are",
                    hint="cast to a type such as INTEGER, NUMERIC, TEXT, VARCHAR, DATE or TIMESTAMP",
                )

    def _rename_shadowing_ctes(self, withs: list[exp.With], ours: list[exp.CTE]) -> None:
        """A user CTE named like a base table our CTE bodies read gets a fresh name (its references keep the
        old one as alias), so that our bodies read the table wherever the engine lets them see user CTEs."""
        read = {t.name.lower() for cte in ours for t in cte.find_all(exp.Table)}
        for with_ in withs:
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
                        note_renamed(self.renamed, fresh, ref.name, ref.name)
                    ref.set("this", exp.to_identifier(fresh))
                self.renamed.setdefault(fresh, cte.alias)
                cte.args["alias"].set("this", exp.to_identifier(fresh))

    def _repeat_in_isolated_withs(self) -> None:
        """Where a nested WITH's CTE bodies cannot see the statement's WITH (MariaDB), the CTEs they read of
        ours are repeated first in that WITH: there they see no user CTE, and read the tables."""
        ours = {name: table for name, table in self.secured.values()}
        for with_ in self.isolated:
            needed = dict.fromkeys(
                t.name for cte in with_.expressions for t in cte.this.find_all(exp.Table) if t.name in ours
            )
            copies = [self._secure_cte(name, ours[name]) for name in needed if name not in _names_of(with_)]
            if copies:
                with_.set("expressions", copies + list(with_.expressions))

    def _walk(self, node: exp.Expr, visible: dict[str, exp.CTE], unsure: dict[str, str]) -> None:
        """Rewrite the tables under `node`. `visible`: the CTEs a name there means (the engine's scoping);
        `unsure`: names some engine of this record reads as a CTE there and another as a table (refused)."""
        with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
        if isinstance(with_, exp.With):
            self._walk_with(node, with_, visible, unsure)
            visible = {**visible, **{self.key(cte.args["alias"].this): cte for cte in with_.expressions}}
            unsure = {k: v for k, v in unsure.items() if k not in visible}
        for child in list(node.iter_expressions()):
            if child is with_:
                continue
            if isinstance(child, exp.Table):
                self._table(child, visible, unsure)
            self._walk(child, visible, unsure)

    def _walk_with(self, node: exp.Expr, with_: exp.With, visible: dict[str, exp.CTE], unsure: dict[str, str]) -> None:
        """The CTE bodies of `with_`, each with the names it sees as the engine scopes them."""
        ctes: list[exp.CTE] = list(with_.expressions)
        names = [self.key(cte.args["alias"].this) for cte in ctes]
        recursive = bool(with_.args.get("recursive")) or dialects.recurses_without_keyword(self.engine.name)
        twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
        if twice is not None:
            # Engines refuse it; renaming our way around it would make the statement run.
            raise RejectedSQL(f"CTE `{twice}` is defined twice in one WITH", hint="give each CTE its own name")
        clash = next((n for n in names if n in visible or n in unsure), None)
        if clash is not None and not self.engine.redefines_ctes_consistently:
            raise RejectedSQL(
                f"the nested WITH redefines CTE `{clash}`, which {self.engine.name} does not resolve consistently",
                hint=f"give the inner CTE `{clash}` a name of its own",
            )
        outer, outer_unsure = visible, unsure
        if not self.engine.nested_ctes_see_outer_ctes and self._isolated(node, with_):
            self.isolated.append(with_)
            reason = (
                f"the CTEs of a WITH inside a subquery cannot read the CTEs of an outer WITH on {self.engine.name} "
                "(MariaDB reads a table of that name instead)"
            )
            outer, outer_unsure = {}, {**unsure, **dict.fromkeys(visible, reason)}
        for i, cte in enumerate(ctes):
            seen, later = self._siblings_seen(len(ctes), i, recursive)
            scope = {**outer, **{names[j]: ctes[j] for j in seen}}
            doubt = {**outer_unsure, **dict.fromkeys((names[j] for j in later), _LATER_SIBLING)}
            doubt = {k: v for k, v in doubt.items() if k not in scope}
            body = cte.this
            if i not in seen or self.engine.anchor_sees_recursive_cte or self.engine.ctes_see_later_siblings:
                self._walk(body, scope, doubt)
                continue
            # The anchor of recursive CTE `t` reads base table `t` (DuckDB); or an outer CTE `t`? Refused.
            anchor = {k: v for k, v in scope.items() if k != names[i]}
            anchor_doubt = {**doubt}
            if names[i] in outer or names[i] in outer_unsure:
                anchor_doubt[names[i]] = "engines differ on what the anchor of a recursive CTE reads by its name"
            if isinstance(body, exp.Union) and body.args.get("with_") is None:
                self._walk_recursive_body(body, (anchor, anchor_doubt), (scope, doubt))
            else:
                self._walk(body, anchor, anchor_doubt)

    def _isolated(self, node: exp.Expr, with_: exp.With) -> bool:
        """Whether the WITH of `node` is nested in a subquery, not the statement's own nor a CTE's body."""
        return with_ is not self.host_with and node.parent is not None and not isinstance(node.parent, exp.CTE)

    def _walk_recursive_body(
        self,
        body: exp.Union,
        anchor: tuple[dict[str, exp.CTE], dict[str, str]],
        term: tuple[dict[str, exp.CTE], dict[str, str]],
    ) -> None:
        """Only the recursive term of `anchor UNION [ALL] term` reads the CTE itself where the anchor reads the
        base table of its name (DuckDB): there the anchor's reference is secured."""
        for child in list(body.iter_expressions()):
            scope, doubt = term if child is body.expression else anchor
            if isinstance(child, exp.Table):
                self._table(child, scope, doubt)
            self._walk(child, scope, doubt)

    def _siblings_seen(self, count: int, index: int, recursive: bool) -> tuple[range, range]:
        """Which CTEs of one WITH a CTE body sees (fewer is safe: the rest are secured), and which later
        ones the engines of this record may or may not see (refused)."""
        if self.engine.ctes_see_later_siblings:
            return range(count), range(0)
        if not recursive:
            return range(index), range(0)
        later = self.engine.recursive_ctes_see_later_siblings
        if later:
            return range(count), range(0)
        return range(index + 1), range(index + 1, count) if later is None else range(0)

    def _table(self, node: exp.Table, visible: dict[str, exp.CTE], unsure: dict[str, str]) -> None:
        target = node.this
        if isinstance(target, exp.Func):
            if not sql_functions.table_function_allowed(target, restricted=True):
                raise RejectedSQL(f"table function `{sql_functions.names(target)[0]}` is not allowed")
            return
        if not isinstance(target, exp.Identifier):
            raise RejectedSQL("only named tables can be read", hint="name a table from list_tables")
        prefix = dialects.wildcard_prefix(node, self.engine.name)
        if prefix is not None:
            check_wildcard(self.role, self.catalog, node, prefix)
            return
        db, catalog_part = node.args.get("db"), node.args.get("catalog")
        if db is None and catalog_part is None and self.key(target) in visible:
            # A CTE of the query: its body is rewritten where it is defined.
            self.cte_refs.setdefault(id(visible[self.key(target)]), []).append(node)
            return
        if db is None and catalog_part is None:
            key = self.key(target)
            reason = unsure.get(key)
            if reason is None and self.engine.cte_name_case_varies and key.lower() in {k.lower() for k in visible}:
                reason = f"engines of {self.engine.name} differ on whether CTE names ignore case"
            if reason is not None:
                raise RejectedSQL(
                    f"`{target.name}` may name a CTE or a table here: {reason}",
                    hint=f"give the CTE `{target.name}` a name of its own, defined in the WITH that reads it, "
                    "and write it as it is defined",
                )
        table = self._resolve(node)
        if table is None or not self.role.can_read(table):
            raise _unknown_table(node)
        if node.args.get("sample") is not None:
            # The role reads a CTE of the table, and engines sample only base tables.
            raise RejectedSQL(
                f"TABLESAMPLE cannot apply to `{node.name}` for role `{self.role.name}`: the role reads the table "
                "through its filtered view, which engines cannot sample",
                hint="take a sample with ORDER BY random() LIMIT n, or filter on a key range",
            )
        cte_name = self._cte_name(table)
        alias = node.args.get("alias")
        if alias is None:
            node.set("alias", exp.TableAlias(this=target.copy()))
            note_renamed(self.renamed, cte_name, target.name, ".".join(part.name for part in node.parts))
        self.renamed.setdefault(cte_name, table.name)
        node.set("this", exp.to_identifier(cte_name))
        node.set("db", None)
        node.set("catalog", None)

    def _resolve(self, node: exp.Table) -> Table | None:
        if SYSTEM_TABLE.match(node.name):
            return None
        parts = [part.name for part in node.parts]
        if any(part.lower() in SYSTEM_SCHEMAS for part in parts[:-1]):
            return None
        return find_table(self.catalog, parts, self.engine.default_schema)

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
        # Built in place (copy=False): the builders would otherwise copy the growing query at every step.
        body = exp.select(*columns, copy=False).from_(self._base(table), copy=False)
        if rule is not None and rule.row_filter:
            predicate = parse_row_filter(rule.row_filter, self.engine.name, f"table `{table.name}`")
            for inner in list(predicate.find_all(exp.Table)):
                inner.replace(self._base_by_name(inner))
            body = body.where(predicate, copy=False)
        fenced = rule is not None and bool(rule.row_filter) and self.fenced
        # The filter must run before the query's own predicates when one of them could leak (policy/fence.py):
        # else the planner may evaluate one such as CAST(name AS INTEGER) = 1 on a row the filter drops, and
        # its error (or none) tells about that row. The engine's fence (MATERIALIZED, or a LIMIT that stops
        # merging and push-down) sees to it. Without one the engine merges the CTE and can use indexes.
        if fenced and self.engine.fence_limit is not None:
            body = body.limit(exp.Literal.number(self.engine.fence_limit), copy=False)
        cte = exp.CTE(this=body, alias=exp.TableAlias(this=exp.to_identifier(cte_name)))
        if fenced and self.engine.fence_materialized:
            cte.set("materialized", True)
        elif self.engine.inline_unfenced:
            cte.set("materialized", False)
        return cte

    def _base(self, table: Table) -> exp.Table:
        """The base table itself. Where a CTE sees later siblings (SQLite), the default schema (`main.`) pins
        the real table; elsewhere ours come first, and a recursive WITH has its shadowing CTEs renamed. A
        warehouse table is named by its parts (`project`.`dataset`.`table`)."""
        parts = qualified_parts(table)
        if len(parts) >= 3:
            return exp.table_(parts[-1], db=parts[-2], catalog=".".join(parts[:-2]), quoted=True)
        schema = table.schema or (self.engine.default_schema if self.engine.ctes_see_later_siblings else None)
        return exp.table_(table.identifier, db=schema, quoted=True)

    def _base_by_name(self, node: exp.Table) -> exp.Table:
        table = find_table(self.catalog, [part.name for part in node.parts], self.engine.default_schema)
        if table is None:
            raise ConfigError(f"a row filter of role `{self.role.name}` reads unknown table `{node.name}`")
        base = self._base(table)
        base.set("alias", node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name)))
        return base


def rewrite_for(role: Role, expression: E, catalog: Catalog, dialect: str, *, copy: bool = True) -> E:
    """Replace each base-table reference by the role's filtered CTE. Unrestricted roles pass through.

    With `copy=False` the expression is rewritten in place (faster; the caller no longer needs it).

    Raises UnknownTable (worded as for a table that does not exist) for denied, unlisted, system and
    unknown tables, and RejectedSQL for functions a restricted role may not call.
    """
    if role.unrestricted:
        return expression
    return Rewriter(role, catalog, dialect).rewrite(expression.copy() if copy else expression)


def reads_fences(tree: exp.Expr) -> bool:
    """Whether a rewritten statement reads fenced CTEs (engines then steer their planners, see Engine.session)."""
    return bool(tree.meta.get(FENCED))


def _names_of(with_: exp.With) -> set[str]:
    return {cte.alias for cte in with_.expressions}


def _all_names(tree: exp.Expr) -> Iterable[str]:
    for cte in tree.find_all(exp.CTE):
        yield cte.alias
    for table in tree.find_all(exp.Table):
        yield table.name


def _unknown_table(node: exp.Table) -> UnknownTable:
    name = ".".join(p.name for p in node.parts)
    return UnknownTable(f"no table `{name}`", hint="call list_tables to see the tables you can read")
