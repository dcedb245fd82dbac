"""A policy bound to the schema it was checked against: what appears later is held back from restricted roles.

Rules name tables and columns. When the schema changes while a server runs, a name can come to mean another
object: a denied table renamed `salaries_2025` is a table no rule names, which `unlisted = "allow"` would
let through; a hidden column renamed is a column no rule hides. Following each object by the engine's own
identity would need one per engine (a PostgreSQL oid survives a rename; SQLite's rootpage changes on VACUUM
and is reused after a DROP; MariaDB has none a reader can rely on), and would still let through a copy
(`CREATE TABLE s2 AS SELECT * FROM salaries`). So the rule is by name and the same on every engine: a table
or column that was not there when the policy was checked is held back from restricted roles until the
policy is checked again (the next start). Names the policy gives that disappear are logged once.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace

from sophrosyne.errors import ConfigError
from sophrosyne.schema.catalog import Catalog, Table
from sophrosyne.sql.policy.file import Policy

logger = logging.getLogger("sophrosyne.sql.policy")


class Binding:
    """The tables and columns (lower-cased) a policy was checked against, shared by every role of a source."""

    def __init__(self) -> None:
        # The catalog the policy was checked against, kept as it is: its names, lower-cased, are derived only
        # when another catalog comes (a set per table cost 21 MB at 20,000 tables, for a change that is rare).
        self._baseline: Catalog | None = None
        self._known: dict[str, set[str]] | None = None
        self._lock = threading.Lock()
        self._told: set[str] = set()

    @property
    def bound(self) -> bool:
        return self._baseline is not None or self._known is not None

    def admit(self, catalog: Catalog, policy: Policy | None) -> Catalog:
        """The catalog that restricted roles' rules apply to.

        The first time, the policy is checked against `catalog` (ConfigError with the file and the line when
        it names what the database lacks) and `catalog` becomes the baseline. Later readings keep only the
        tables and columns of the baseline."""
        with self._lock:
            if self._known is None:
                if self._baseline is None:
                    if policy is not None:
                        policy.check(catalog)
                    self._baseline = catalog
                    return catalog
                if catalog is self._baseline:
                    return catalog  # another role's first look at the same reading
                tables = self._baseline.tables.values()
                self._known = {t.name.lower(): {c.name.lower() for c in t.columns} for t in tables}
                self._baseline = None  # the names are what is kept from now on
            known = self._known
        admitted, held = _held_back(catalog, known)
        if policy is not None:
            self._tell_missing(policy, catalog)
        if held:
            # Without a policy file only roles made in code are restricted: the operator of a server has nothing
            # to act on, so it is not a warning there.
            self._tell(
                f"held back from restricted roles until the policy is checked again (restart the server): "
                f"{', '.join(held[:10])}{' ...' if len(held) > 10 else ''}, which appeared after the policy was "
                "checked",
                logging.WARNING if policy is not None else logging.INFO,
            )
        return admitted

    def _tell_missing(self, policy: Policy, catalog: Catalog) -> None:
        try:
            policy.check(catalog)
        except ConfigError as exc:  # what the rule named is gone: it guards nothing now, which is safe
            self._tell(f"the schema changed under the policy: {exc.message}")

    def _tell(self, message: str, level: int = logging.WARNING) -> None:
        with self._lock:
            if message in self._told:
                return
            self._told.add(message)
        logger.log(level, "%s", message)


def _held_back(catalog: Catalog, known: dict[str, set[str]]) -> tuple[Catalog, list[str]]:
    """`catalog` without the tables and columns `known` lacks, and their names."""
    tables: dict[str, Table] = {}
    held: list[str] = []
    for key, table in catalog.tables.items():
        columns = known.get(table.name.lower())
        if columns is None:
            held.append(f"table `{table.name}`")
            continue
        new = [c.name for c in table.columns if c.name.lower() not in columns]
        if not new:
            tables[key] = table
            continue
        held.extend(f"column `{table.name}.{c}`" for c in new)
        kept = [c for c in table.columns if c.name.lower() in columns]
        names = {c.name for c in kept}
        tables[key] = replace(
            table,
            columns=kept,
            primary_key=[c for c in table.primary_key if c in names],
            foreign_keys=[fk for fk in table.foreign_keys if all(c in names for c in fk.columns)],
        )
    if not held:
        return catalog, held
    admitted = {t.name for t in tables.values()}
    for key, table in tables.items():
        if any(fk.ref_table not in admitted for fk in table.foreign_keys):
            tables[key] = replace(table, foreign_keys=[fk for fk in table.foreign_keys if fk.ref_table in admitted])
    return Catalog(tables=tables, dialect=catalog.dialect), held
