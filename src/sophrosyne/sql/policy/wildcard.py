"""BigQuery wildcard tables for a restricted role: read as written only where the role sees every table they read."""

from __future__ import annotations

from sqlglot import exp

from sophrosyne.errors import RejectedSQL, UnknownTable
from sophrosyne.schema.catalog import Catalog
from sophrosyne.sql.policy.qualified import qualified_parts
from sophrosyne.sql.policy.roles import Role

__all__ = ["check_wildcard"]


def check_wildcard(role: Role, catalog: Catalog, node: exp.Table, prefix: str) -> None:
    """A BigQuery wildcard table (`dataset.events_*`) reads every table of its dataset its prefix starts,
    those created after the catalog was read too: it is read as written only when the role sees each of
    them whole (no rule restricts one) and may read tables its policy does not list."""
    written = ".".join(part.name for part in node.parts)
    qualifiers = [part.name.lower() for part in node.parts][:-1]
    matched = [
        table
        for table in catalog.tables.values()
        if len(parts := qualified_parts(table)) > len(qualifiers)
        and [p.lower() for p in parts[-len(qualifiers) - 1 : -1]] == qualifiers
        and parts[-1].lower().startswith(prefix.lower())
    ]
    if not matched:
        raise UnknownTable(f"no table `{written}`", hint="call list_tables to see the tables you can read")
    hint = "name the tables one by one (each gets the role's rules), or ask for a role that sees them all"
    if not role.unlisted_allowed:
        raise RejectedSQL(
            f"the wildcard table `{written}` is not allowed for role `{role.name}`: it would also read "
            "tables created later, which the role's policy does not list",
            hint=hint,
        )
    for table in matched:
        rule = role._rule(table.name)
        restricted = rule is not None and (bool(rule.row_filter) or rule.columns is not None or bool(rule.hidden))
        if restricted or not role.can_read(table):
            raise RejectedSQL(
                f"the wildcard table `{written}` is not allowed for role `{role.name}`: it reads a table the "
                "role does not see whole",
                hint=hint,
            )
