"""Every name a policy gives, checked against the database's catalog: a misspelt name fails closed, at start."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlglot import exp

from sophrosyne.errors import ConfigError
from sophrosyne.schema.catalog import Catalog, Table
from sophrosyne.sql.policy.qualified import find_table, tables_named
from sophrosyne.sql.policy.roles import Role
from sophrosyne.sql.policy.row_filter import parse_row_filter

# Where a key of the policy file is written: `where('roles', 'hr', 'deny', value='salaries')` -> `file:12`.
Where = Callable[..., str]


_MUST_EXIST = "Every name a policy gives must exist in the database (docs/policy.md, The policy file)."


def closest(name: str, choices: list[str]) -> str | None:
    """The choice `name` most likely misspells, if one is close."""
    from rapidfuzz import fuzz, process  # loaded on the first miss, not at start-up

    best = process.extractOne(name, choices, scorer=fuzz.WRatio, processor=str.lower, score_cutoff=75)
    return None if best is None else str(best[0])


def suggestion(name: str, choices: list[str], what: str) -> str:
    near = closest(name, choices)
    return f"Did you mean `{near}`? {_MUST_EXIST}" if near else f"{_MUST_EXIST} Check the {what}'s spelling."


def check_names(roles: Iterable[Role], where: Where, catalog: Catalog) -> None:
    """ConfigError naming the file and the line (`where`) of the first name the catalog does not have: a denied table,
    a table rule, a visible or hidden column, a table or column a row filter reads."""
    tables = catalog.table_names
    for role in roles:
        for denied in role.denied:
            if not _one_table(catalog, denied, where("roles", role.name, "deny", value=denied), role.name):
                raise ConfigError(
                    f"{where('roles', role.name, 'deny', value=denied)}: role `{role.name}` denies table "
                    f"`{denied}`: no such table in the database, so the table it meant would stay readable.",
                    hint=suggestion(denied, tables, "table"),
                )
        for name, rule in role.tables.items():
            keys = ("roles", role.name, "tables", name)
            table = next(iter(_one_table(catalog, name, where(*keys), role.name)), None)
            if table is None:
                raise ConfigError(
                    f"{where(*keys)}: role `{role.name}` has a rule for table `{name}`: no such table in the database.",
                    hint=suggestion(name, tables, "table"),
                )
            for key, columns in (("columns", rule.columns or []), ("hidden", rule.hidden)):
                for column in columns:
                    if table.column(column) is None:
                        raise ConfigError(
                            f"{where(*keys, key, value=column)}: role `{role.name}`, table `{name}`: no "
                            f"column `{column}` (in `{key}`).",
                            hint=suggestion(column, table.column_names, "column"),
                        )
            if rule.row_filter:
                _check_filter(where, catalog, table, rule.row_filter, (*keys, "row_filter"), role.name)


def _one_table(catalog: Catalog, name: str, at: str, role: str) -> list[Table]:
    """The tables a policy's name means (none, or one). A name that the last parts of several warehouse tables
    end with (`orders` for `db.a.orders` and `db.b.orders`) is refused: the rule would reach tables its author
    did not mean."""
    named = tables_named(catalog, name)
    if len(named) > 1:
        shown = ", ".join(f"`{t.name}`" for t in named[:3]) + (", ..." if len(named) > 3 else "")
        raise ConfigError(
            f"{at}: role `{role}` names table `{name}`, which means {len(named)} tables: {shown}.",
            hint="Write the table's qualified name (`schema.table` or `catalog.schema.table`).",
        )
    return named


def _check_filter(where: Where, catalog: Catalog, table: Table, text: str, keys: tuple[str, ...], role: str) -> None:
    whose = f"role `{role}`, table `{table.name}`"
    predicate = parse_row_filter(text, catalog.dialect, whose)
    at = where(*keys)
    for inner in predicate.find_all(exp.Table):
        if find_table(catalog, [part.name for part in inner.parts]) is None:
            raise ConfigError(
                f"{at}: {whose}: the row filter reads unknown table `{inner.name}`.",
                hint=suggestion(inner.name, catalog.table_names, "table"),
            )
    for column in predicate.find_all(exp.Column):
        holders = _tables_in_scope(column, table, catalog)
        if not any(t.column(column.name) is not None for t in holders):
            known = sorted({c for t in holders for c in t.column_names})
            raise ConfigError(
                f"{at}: {whose}: the row filter uses unknown column `{column.sql()}`.",
                hint=suggestion(column.name, known, "column"),
            )


def _tables_in_scope(column: exp.Column, table: Table, catalog: Catalog) -> list[Table]:
    """The tables a row filter's column may come from: the one its qualifier names, else the filter's own table
    and those of every subquery around it."""
    scope: list[tuple[str, Table]] = [(table.name.lower(), table)]
    select = column.find_ancestor(exp.Select)
    while select is not None:
        for ref in select.find_all(exp.Table):
            found = find_table(catalog, [part.name for part in ref.parts])
            if found is not None and ref.find_ancestor(exp.Select) is select:
                scope.append(((ref.alias_or_name or ref.name).lower(), found))
        select = select.find_ancestor(exp.Select)
    qualifier = column.table.lower()
    if qualifier:
        named = [t for alias, t in scope if alias == qualifier or t.name.lower() == qualifier]
        return named or [t for _, t in scope]
    return [t for _, t in scope]
