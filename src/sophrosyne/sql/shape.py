"""Limits on a statement's shape, checked by the guard before any engine plans it and before anything recurses.

Planning is not bounded by a statement timeout: PostgreSQL spent 23 s planning a chain of 500 CTEs under a 1 s
limit (its planner does not stop for interrupts there), and 14 minutes for 3,000. Python recursion is bounded
too: a 1,500-deep expression overflows sqlglot's parser and generator and our rewrite. So the size of what the
planner is given is bounded here, each limit a setting (`sql_max_*` in settings/sections.py) far above what real
queries need: across BIRD dev, Spider dev and BIRD mini-dev's gold SQL (4,568 queries in five forms) the most
are a tree 21 deep, 3 CTEs, 10 relations in FROM and JOIN, 6 nested queries, 2 set operations, an 85-character
literal and a 53-character LIKE pattern. At the defaults PostgreSQL plans the largest statement of each shape
in under 0.3 s (20 joined catalog tables: 0.26 s; 21 take 0.3 s more each few tables, 32 take 1.8 s).

Tables are counted as the planner meets them. Its join search, which grows fast with the number of
relations, is one query's FROM and JOIN with each CTE read and subquery there flattened into it (engines pull
them up): at most `sql_max_tables` relations. Engines also inline a CTE wherever it is read (PostgreSQL's
`NOT MATERIALIZED`, MariaDB's derived tables), so a CTE read twice by the next, read twice by the next, grows
as 2^n: PostgreSQL planned such a chain of 2^6 relations in 1.1 s, 2^8 in 3.8 s, 2^9 in 22 s. The whole
statement with each CTE counted as often as it is read is held to twice the limit, room for real analytics
(Spider 2.0's bq098 reads one small CTE in six scalar subqueries: 24) that a 2^n chain passes at n = 6.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sqlglot import exp
from sqlglot.tokenizer_core import Token, TokenType

from sophrosyne.errors import RejectedSQL
from sophrosyne.settings import ENV_PREFIX, Limits, Settings

__all__ = ["ShapeLimits", "check_tokens", "check_tree", "too_deep", "too_many_ctes"]

# Expressions whose `expression` argument is a pattern the engine compiles and matches.
_PATTERNS = (
    exp.Like, exp.ILike, exp.SimilarTo, exp.Glob, exp.RegexpLike, exp.RegexpILike, exp.RegexpReplace,
    exp.RegexpExtract, exp.RegexpExtractAll, exp.RegexpSplit, exp.RegexpCount, exp.RegexpInstr, exp.RegexpSubstr,
)  # fmt: skip
_OPEN = {TokenType.L_PAREN, TokenType.CASE}
_CLOSE = {TokenType.R_PAREN, TokenType.END}
# The whole statement, each CTE counted as often as it is read, may read twice `sql_max_tables` relations.
_TABLES_READ = 2


@dataclass(frozen=True)
class ShapeLimits:
    """The shape limits of the settings (`sql_max_*`), as the guard reads them."""

    depth: int
    ctes: int
    tables: int
    query_depth: int
    set_operations: int
    literal_chars: int
    pattern_chars: int

    @classmethod
    def from_settings(cls, settings: Settings) -> ShapeLimits:
        return cls(
            depth=settings.limits.sql_max_depth,
            ctes=settings.limits.sql_max_ctes,
            tables=settings.limits.sql_max_tables,
            query_depth=settings.limits.sql_max_query_depth,
            set_operations=settings.limits.sql_max_set_operations,
            literal_chars=settings.limits.sql_max_literal_chars,
            pattern_chars=settings.limits.sql_max_pattern_chars,
        )

    @classmethod
    @lru_cache(maxsize=1)
    def defaults(cls) -> ShapeLimits:
        """The defaults of the settings model (without reading SOPHROSYNE_* variables)."""
        fields = Limits.model_fields
        return cls(**{name: fields[f"sql_max_{name}"].default for name in cls.__dataclass_fields__})


def check_tokens(tokens: list[Token], limits: ShapeLimits) -> None:
    """Refuse nesting (parentheses, CASE ... END) past the depth limit before the recursive parser meets it,
    and CTEs past their limit before a long statement is parsed (`name AS (` or `AS [NOT] MATERIALIZED (`
    opens a CTE and nothing else that may run here)."""
    level = deepest = ctes = 0
    for i, token in enumerate(tokens):
        kind = token.token_type
        if kind in _OPEN:
            level += 1
            deepest = max(deepest, level)
            if kind is TokenType.L_PAREN and _opens_cte(tokens, i):
                ctes += 1
        elif kind in _CLOSE:
            level -= 1
    if deepest > limits.depth:
        raise too_deep(limits, f"{deepest:,} levels deep")
    if ctes > limits.ctes:
        raise too_many_ctes(limits, ctes)


def _opens_cte(tokens: list[Token], i: int) -> bool:
    before = tokens[max(0, i - 3) : i]
    if before and before[-1].token_type is TokenType.ALIAS:
        return True
    materialized = bool(before) and before[-1].text.upper() == "MATERIALIZED"
    return materialized and any(t.token_type is TokenType.ALIAS for t in before[:-1])


def too_many_ctes(limits: ShapeLimits, found: int | None = None) -> RejectedSQL:
    return _over(
        f"The query defines {f'{found:,}' if found else f'more than {limits.ctes:,}'} CTEs",
        limits.ctes,
        "ctes",
        "Merge steps into fewer CTEs, or run the work as several queries.",
    )


def too_deep(limits: ShapeLimits, found: str = "too deeply to be read") -> RejectedSQL:
    return _over(
        f"The query is nested {found}",
        limits.depth,
        "depth",
        "Flatten it: a list of values in IN (...) rather than a long chain of OR, a CTE or a join rather than "
        "a subquery in a subquery.",
    )


def check_tree(tree: exp.Expr, limits: ShapeLimits) -> None:
    """Refuse a parsed statement whose shape passes a limit; iterative, whatever the depth of the tree."""
    stack: list[tuple[exp.Expr, int, int]] = [(tree, 1, 0)]
    ctes: list[exp.CTE] = []
    size = _Size()
    while stack:
        node, depth, queries = stack.pop()
        if depth > limits.depth:
            raise too_deep(limits, f"more than {limits.depth:,} levels deep")
        if isinstance(node, exp.Literal):
            if node.is_string and len(node.this) > limits.literal_chars:
                raise _over(
                    f"A string literal is {len(node.this):,} characters long",
                    limits.literal_chars,
                    "literal_chars",
                    "Use a shorter literal: match a distinctive part of the text with LIKE.",
                )
        elif isinstance(node, exp.Select):
            queries += 1
            size.query_depth = max(size.query_depth, queries)
        elif isinstance(node, exp.From | exp.Join):
            size.tables += 1
        elif isinstance(node, exp.SetOperation):
            size.set_operations += 1
        elif isinstance(node, exp.CTE):
            ctes.append(node)
            if len(ctes) > limits.ctes:
                raise too_many_ctes(limits)
        elif isinstance(node, _PATTERNS):
            pattern = node.args.get("expression")
            if isinstance(pattern, exp.Literal) and len(pattern.name) > limits.pattern_chars:
                raise _over(
                    f"A pattern is {len(pattern.name):,} characters long",
                    limits.pattern_chars,
                    "pattern_chars",
                    "Use a shorter pattern.",
                )
        for child in node.iter_expressions():
            stack.append((child, depth + 1, queries))
    expansion = _Expansion(ctes, limits)
    for query in tree.find_all(exp.Select):
        expansion.check_join(query)
    if ctes:
        expansion.check(tree)  # CTE references count as their bodies
    else:
        expansion._judge(size)


@dataclass
class _Size:
    tables: int = 0
    set_operations: int = 0
    query_depth: int = 0


class _Expansion:
    """The size of a statement with every CTE reference replaced by the CTE's body, as a planner may see it."""

    def __init__(self, ctes: list[exp.CTE], limits: ShapeLimits) -> None:
        self.limits = limits
        self.by_name: dict[str, list[exp.CTE]] = {}
        for cte in ctes:
            self.by_name.setdefault(cte.alias_or_name.lower(), []).append(cte)
        self.sizes: dict[int, _Size] = {}
        self.visiting: set[int] = set()
        self.read: set[int] = set()  # the CTEs some reference reads
        self.joins: dict[int, int] = {}  # the relations of each query's join search, by the query's id

    def check(self, tree: exp.Expr) -> None:
        total = self._size(tree)
        for ctes in self.by_name.values():  # a CTE no one reads may be planned all the same
            for cte in ctes:
                if id(cte) not in self.read:
                    size = self._cte(cte)
                    total.tables += size.tables
                    total.set_operations += size.set_operations
        self._judge(total)

    def _judge(self, size: _Size) -> None:
        limits = self.limits
        if size.tables > _TABLES_READ * limits.tables:
            raise _over(
                "The query reads more tables or subqueries in FROM and JOIN in all, each CTE counted as often as "
                f"it is read, than twice the limit of one join: {_TABLES_READ * limits.tables:,}",
                limits.tables,
                "tables",
                "Read each CTE fewer times (join it once rather than in many subqueries), or split the work into "
                "several queries.",
            )
        if size.set_operations > limits.set_operations:
            raise _over(
                f"The query has more than {limits.set_operations:,} UNION, INTERSECT or EXCEPT operations "
                "(each CTE counted as often as it is read)",
                limits.set_operations,
                "set_operations",
                "Combine the branches: one SELECT with a WHERE ... IN (...) or a CASE often replaces many.",
            )
        if size.query_depth > limits.query_depth:
            raise _over(
                f"The query nests more than {limits.query_depth:,} queries in one another (a CTE read counts "
                "as the query it holds)",
                limits.query_depth,
                "query_depth",
                "Nest fewer subqueries: join the tables, or compute steps in fewer CTEs.",
            )

    def check_join(self, query: exp.Select) -> None:
        """Refuse a query whose join, as the planner flattens it, holds more relations than the limit."""
        joined = self._joined(query)
        if joined > self.limits.tables:
            raise _over(
                f"One query joins {joined:,} tables or subqueries in FROM and JOIN (a CTE or subquery there "
                "counted as the tables it joins)",
                self.limits.tables,
                "tables",
                "Join fewer tables in one query: join what is needed, aggregate a part in a CTE, or split the work "
                "into several queries.",
            )

    def _joined(self, query: exp.Expr) -> int:
        """The relations of one join search: a query's FROM and JOIN items, a CTE read or a subquery there
        counted as the relations it joins (engines pull both up); anything else is one relation."""
        if isinstance(query, exp.Subquery):
            return self._joined(query.this)
        if not isinstance(query, exp.Select):
            return 1  # a set operation or VALUES is planned on its own
        key = id(query)
        if key not in self.joins:
            self.joins[key] = 0  # a CTE reading itself (recursive) counts once
            items = [query.args.get("from_"), *query.args.get("joins", [])]
            self.joins[key] = sum(self._item(item.this) for item in items if item is not None)
        return self.joins[key]

    def _item(self, source: exp.Expr) -> int:
        if isinstance(source, exp.Subquery):
            return self._joined(source)
        named = isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier)
        if not named or source.args.get("db") is not None:
            return 1
        candidates = self.by_name.get(source.name.lower(), [])
        return max((self._joined(c.this) for c in candidates), default=1)

    def _cte(self, cte: exp.CTE) -> _Size:
        key = id(cte)
        if key not in self.sizes:
            self.visiting.add(key)
            try:
                self.sizes[key] = self._size(cte.this)
            finally:
                self.visiting.discard(key)
        return self.sizes[key]

    def _size(self, top: exp.Expr) -> _Size:
        size = _Size()
        stack: list[tuple[exp.Expr, int]] = [(top, 0)]
        while stack:
            node, queries = stack.pop()
            if isinstance(node, exp.With):
                continue  # CTE bodies count where they are read
            if isinstance(node, exp.Select):
                queries += 1
                size.query_depth = max(size.query_depth, queries)
            elif isinstance(node, exp.SetOperation):
                size.set_operations += 1
            elif isinstance(node, exp.From | exp.Join):
                # Each FROM item is a relation to plan (a table, a subquery, a function); a CTE, its body.
                source = node.this
                named = isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier)
                read = self._read(source) if named else _Size()
                size.tables += read.tables or 1
                size.set_operations += read.set_operations
                size.query_depth = max(size.query_depth, queries + read.query_depth)
            self._judge(size)  # stop as soon as a limit is passed: an expansion can grow as 2^n
            stack.extend((child, queries) for child in node.iter_expressions())
        return size

    def _read(self, table: exp.Table) -> _Size:
        """What reading this name costs: the largest CTE of that name (scopes aside), or one table."""
        if table.args.get("db") is not None:
            return _Size()
        candidates = [c for c in self.by_name.get(table.name.lower(), []) if id(c) not in self.visiting]
        self.read.update(id(c) for c in candidates)
        sizes = [self._cte(c) for c in candidates]
        if not sizes:
            return _Size()
        return _Size(
            tables=max(s.tables for s in sizes),
            set_operations=max(s.set_operations for s in sizes),
            query_depth=max(s.query_depth for s in sizes),
        )


def _over(found: str, limit: int, name: str, hint: str) -> RejectedSQL:
    setting = f"sql_max_{name}"
    return RejectedSQL(
        f"{found}; at most {limit:,} are allowed (setting `{setting}`, {ENV_PREFIX}{setting.upper()}).",
        hint=hint,
    )
