"""A role's view of the catalog: what it may read, with the rules that reach related tables.

A partition or an inheritance child follows its protected ancestor.

PostgreSQL returns a child's rows when its parent is read, and a child can be read by its own name: with
`unlisted = "allow"`, a partition of a filtered table would show the rows and columns its parent's rule
hides. So, for a restricted role and a catalog that knows the tables' parents:

- a table whose ancestor is denied is denied;
- a table without a rule of its own, whose ancestors carry one rule (the nearest that has one), gets that
  rule: its row filter (a child has every column of its parent) and its hidden columns; two different
  rules among its ancestors deny it. Only where the role may read unlisted tables: otherwise a child
  without a rule stays unreadable, as any unlisted table;
- a table without a rule of its own that has a protected descendant (a rule, or denied) is denied: reading
  it would return that descendant's rows unfiltered.

Views need a rule of their own everywhere (`Role.can_read`), so a view over a protected table is not
readable unless the policy lists it.
"""

from __future__ import annotations

from dataclasses import replace

from sophrosyne.schema.catalog import Catalog, Table
from sophrosyne.sql.policy.qualified import tables_named
from sophrosyne.sql.policy.roles import Role, TableRule

# (id of the role, id of the catalog) -> (role, catalog, the role with inherited rules), most recent last.
_CACHE: dict[tuple[int, int], tuple[Role, Catalog, Role]] = {}
_CACHE_SIZE = 32


def inherited(role: Role, catalog: Catalog) -> Role:
    """`role` with the rules its protected tables pass to their partitions, children and parents."""
    if role.unrestricted:
        return role
    key = (id(role), id(catalog))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is role and hit[1] is catalog:
        return hit[2]
    result = _denying_ambiguous_rules(_inherited(role, catalog), catalog)
    _CACHE[key] = (role, catalog, result)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    return result


def _denying_ambiguous_rules(role: Role, catalog: Catalog) -> Role:
    """A rule naming a warehouse table by its last parts, which several tables now end with (one added after
    the policy was checked), denies them all: which one its author meant is unknown, and dropping the rule
    would leave them unfiltered."""
    added = [
        table.name
        for name in role.tables
        if catalog.table(name) is None and len(named := tables_named(catalog, name)) > 1
        for table in named
    ]
    return replace(role, denied=[*role.denied, *added]) if added else role


def _inherited(role: Role, catalog: Catalog) -> Role:
    children = [t for t in catalog.tables.values() if t.parents]
    if not children:
        return role
    denied = {d.lower() for d in role.denied}
    added_denied: list[str] = []
    added_rules: dict[str, TableRule] = {}
    for table in children:
        ancestors = _ancestors(table, catalog)
        if table.name.lower() in denied or role._rule(table.name) is not None:
            if any(a.lower() in denied for a in ancestors) and table.name.lower() not in denied:
                added_denied.append(table.name)
            continue
        if any(a.lower() in denied for a in ancestors):
            added_denied.append(table.name)
            continue
        rules = [rule for a in ancestors if (rule := role._rule(a)) is not None]
        if not rules or not role.unlisted_allowed:
            continue
        if any(rule != rules[0] for rule in rules[1:]):
            added_denied.append(table.name)
        else:
            added_rules[table.name] = replace(rules[0], hidden=list(rules[0].hidden))
    protected = {n.lower() for n in [*denied, *added_denied]} | {n.lower() for n in role.tables}
    for table in children:
        if table.name.lower() not in protected:
            continue
        for ancestor in _ancestors(table, catalog):
            lowered = ancestor.lower()
            if role._rule(ancestor) is None and lowered not in denied and ancestor not in added_denied:
                added_denied.append(ancestor)
    if not added_denied and not added_rules:
        return role
    return replace(role, tables={**role.tables, **added_rules}, denied=[*role.denied, *added_denied])


def _ancestors(table: Table, catalog: Catalog) -> list[str]:
    """The catalog names of the table's parents, their parents and so on, nearest first."""
    found: list[str] = []
    frontier = list(table.parents)
    while frontier:
        name = frontier.pop(0)
        if name in found or name == table.name:
            continue
        found.append(name)
        parent = catalog.table(name)
        if parent is not None:
            frontier.extend(parent.parents)
    return found


def restrict(role: Role, catalog: Catalog) -> Catalog:
    """The catalog as `role` sees it: denied tables, unlisted views and hidden columns are absent."""
    if role.unrestricted:
        return catalog
    role = inherited(role, catalog)  # partitions and children follow their protected ancestors
    tables: dict[str, Table] = {}
    for name, table in catalog.tables.items():
        if not role.can_read(table):
            continue
        columns = role.visible_columns(table)
        visible = {c.name for c in columns}
        tables[name] = Table(
            name=table.name,
            columns=columns,
            primary_key=[c for c in table.primary_key if c in visible],
            foreign_keys=[
                fk
                for fk in table.foreign_keys
                if role.can_see_table(fk.ref_table) and all(c in visible for c in fk.columns)
            ],
            description=table.description,
            # The full table's row count would tell how many rows the filter hides.
            row_estimate=None if role._has_filter(name) else table.row_estimate,
            kind=table.kind,
            schema=table.schema,
            local_name=table.local_name,
            rows_at_least=table.rows_at_least,
        )
    return Catalog(tables=tables, dialect=catalog.dialect)
