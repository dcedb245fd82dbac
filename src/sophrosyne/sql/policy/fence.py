"""Whether a role's filtered CTEs need a fence: only when an expression of the query that could leak might run
on a row the filter drops.

Without a fence the engine merges a filtered CTE into the query and may evaluate the query's own predicates
before, or instead of, the row filter. That is harmless for leakproof expressions (sql_functions.leakproof):
they cannot raise or have side effects, so running them on a hidden row tells nothing about it. Anything
else, such as `CAST(name AS INTEGER) = 1` or `1 / (salary - 5000) > 0`, could turn a hidden row's value into
an error, so one such expression anywhere a filtered row can reach keeps every filtered CTE fenced.

Where a row can reach: every predicate (WHERE, ON, HAVING without an aggregate, which engines move into
WHERE), and every expression of a query nested in FROM, WITH or a predicate, since engines merge those
queries into their parent and push the parent's predicates into them. Only the outermost query's own output
(its select list, GROUP BY, ORDER BY, windows, and HAVING terms over aggregates) is computed after every
filter of its tables has run, and may hold any expression.
"""

from __future__ import annotations

from sqlglot import exp

from sophrosyne.sql import functions as sql_functions

# The clauses of the outermost query that engines compute from the rows that passed every filter.
_OUTPUT = ("expressions", "group", "order", "windows", "distinct", "limit", "offset")
# Where a subquery is a set of values, not a value, and may return any number of rows: (parent, argument).
_SETS = ((exp.In, "query"), (exp.Exists, "this"), (exp.Any, "this"), (exp.All, "this"))
# The clauses of a query, which hold expressions but compute nothing themselves.
_CLAUSES = (exp.Where, exp.Having, exp.Group, exp.Order, exp.Limit, exp.Offset, exp.Qualify)


def needs_fence(query: exp.Query) -> bool:
    """Whether some expression of `query` that is not leakproof could run on a row a role's filter drops."""
    return _query_leaks(query, outermost=True)


def _query_leaks(query: exp.Expr, *, outermost: bool) -> bool:
    if isinstance(query, exp.Subquery):
        return _query_leaks(query.this, outermost=outermost)
    if isinstance(query, exp.SetOperation):
        # Each side of an outermost set operation is outermost too: nothing outside it filters its rows.
        sides = (query.this, query.expression)
        if any(_query_leaks(side, outermost=outermost) for side in sides):
            return True
        return _clauses_leak(query, {k for k in query.args if k not in ("this", "expression")}, outermost)
    if isinstance(query, exp.Select):
        return _clauses_leak(query, set(query.args), outermost)
    return True  # a query form not known here keeps the fence


def _clauses_leak(query: exp.Query, keys: set[str], outermost: bool) -> bool:
    for key in sorted(keys):
        value = query.args.get(key)
        for part in value if isinstance(value, list) else [value]:
            if not isinstance(part, exp.Expr):
                continue
            if key == "with_":
                if any(_query_leaks(cte.this, outermost=False) for cte in part.expressions):
                    return True
            elif key in ("from_", "joins"):
                if _source_leaks(part):
                    return True
            elif key == "having" and outermost:
                terms = part.this.flatten() if isinstance(part.this, exp.And) else [part.this]
                if any(_term_leaks(term) for term in terms):
                    return True
            elif key in _OUTPUT and outermost:
                if _output_leaks(part):
                    return True
            elif _leaks(part):
                return True
    return False


def _source_leaks(source: exp.Expr) -> bool:
    """A FROM item or a join: a derived table is merged into its parent, a table function runs per row."""
    for value in source.args.values():
        for part in value if isinstance(value, list) else [value]:
            if not isinstance(part, exp.Expr):
                continue
            if isinstance(part, exp.Table):
                function = part.this if not isinstance(part.this, exp.Identifier) else None
                if function is not None and _leaks(function):
                    return True
                if any(_source_leaks(join) for join in part.args.get("joins") or []):
                    return True
            elif isinstance(part, exp.Query):
                if _query_leaks(part, outermost=False):
                    return True
            elif isinstance(part, exp.TableAlias | exp.Identifier):
                continue
            elif _leaks(part):
                return True
    return False


def _term_leaks(term: exp.Expr) -> bool:
    """A HAVING term of the outermost query: one over an aggregate runs on groups of filtered rows; one
    without is moved into WHERE by the engine, and is a predicate."""
    own_aggregate = any(not _inside_query(node, term) for node in term.find_all(exp.AggFunc))
    return _output_leaks(term) if own_aggregate else _leaks(term)


def _output_leaks(node: exp.Expr) -> bool:
    """An output expression of the outermost query: anything goes, but a query nested in it is checked. Such
    a query meets only rows that passed their filters, so its row count tells nothing hidden."""
    if isinstance(node, exp.Query):
        return _query_leaks(node, outermost=False)
    return any(_output_leaks(child) for child in node.iter_expressions())


def _leaks(node: exp.Expr) -> bool:
    """An expression that could run on a row the filter drops."""
    if isinstance(node, exp.Query):
        return _query_leaks(node, outermost=False) or _row_count_leaks(node)
    if not isinstance(node, _CLAUSES) and not sql_functions.leakproof(node):
        return True
    return any(_leaks(child) for child in node.iter_expressions())


def _row_count_leaks(query: exp.Query) -> bool:
    """A subquery used as a value fails when it returns more than one row, which, correlated with a hidden
    row, tells about that row: it must return one row at most (an aggregate without GROUP BY, or LIMIT 1)."""
    if any(isinstance(query.parent, kind) and query.arg_key == key for kind, key in _SETS):
        return False
    select = query.this if isinstance(query, exp.Subquery) else query
    while isinstance(select, exp.Subquery):
        select = select.this
    if not isinstance(select, exp.Select):
        return True
    limit = select.args.get("limit")
    count = limit.expression if isinstance(limit, exp.Limit) else None
    if isinstance(count, exp.Literal) and count.name in ("0", "1"):
        return False
    if select.args.get("group") is not None:
        return True
    return not all(any(not _inside_query(a, e) for a in e.find_all(exp.AggFunc)) for e in select.expressions)


def _inside_query(node: exp.Expr, top: exp.Expr) -> bool:
    """Whether `node` belongs to a query nested in `top` rather than to `top`'s own query."""
    while node is not top and node.parent is not None:
        node = node.parent
        if node is not top and isinstance(node, exp.Query):
            return True
    return False
