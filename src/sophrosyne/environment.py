"""Environment: the fine-grained tools an agent explores a database with, all on one secured query path."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from sophrosyne.base.deadline import bounded_call
from sophrosyne.database import Database, open_database
from sophrosyne.errors import ConfigError, NotReady
from sophrosyne.schema.catalog import Catalog, ForeignKey, load_bird_descriptions
from sophrosyne.settings import Settings
from sophrosyne.sql.policy import Policy, Role, load_policy, restrict
from sophrosyne.sql.policy.binding import Binding
from sophrosyne.sql.policy.tools import DeclaredTool, check_statements
from sophrosyne.sql.secure import Secured, SecurePath
from sophrosyne.tools.declared import run_declared
from sophrosyne.tools.describe_table import describe_table
from sophrosyne.tools.execute_sql import execute_sql
from sophrosyne.tools.explain_sql import explain_sql
from sophrosyne.tools.export_sql import export_sql
from sophrosyne.tools.find_rows import find_rows
from sophrosyne.tools.get_distinct_values import Grounder, get_distinct_values
from sophrosyne.tools.list_sources import list_sources
from sophrosyne.tools.list_tables import list_tables
from sophrosyne.tools.search_schema import search_schema
from sophrosyne.tools.value_cache import ValueCache

if TYPE_CHECKING:
    from sophrosyne.directives.moderator import Moderator
    from sophrosyne.engines.ssh import SSH
    from sophrosyne.engines.tls import TLS
    from sophrosyne.schema.join_checks import JoinInference

logger = logging.getLogger("sophrosyne.environment")
# How long close waits for background work (which then stops at its next statement); threads are daemons.
CLOSE_WAIT_S = 2.0


# Views kept for callers of roles whose row filters read claims (for_role): a caller past them is set up anew.
CALLER_VIEWS = 256


class Environment:
    """The fine-grained API over one database, seen through one role."""

    def __init__(
        self,
        database: Database,
        *,
        settings: Settings | None = None,
        role: Role | None = None,
        descriptions: Path | None = None,
        values: ValueCache | None = None,
    ) -> None:
        self.db = database
        self.settings = settings or database.settings
        self.role = role or Role()
        self.descriptions = descriptions
        self.values = values or ValueCache()
        self.policy: Policy | None = None
        self.caller = ""  # whose claims this view's row filters read (for_role)
        self._moderator: Moderator | None = None
        self._grounder: Grounder | None = None
        self._role_envs: dict[str, Environment] = {}
        self._seen: Catalog | None = None  # the database's catalog this environment last derived from
        self._catalog: Catalog | None = None
        # The schema the policy was checked against, shared by every role of this database (policy/binding.py).
        self.binding = Binding()
        self._admitted: Catalog | None = None  # what restricted roles' rules apply to
        # Calls run in threads side by side: what is set up once per environment is set up under this lock.
        self._lock = threading.RLock()
        self.secure = SecurePath(
            database, self.role, self.settings, policed=lambda: self._policed_catalog, catalog=lambda: self.catalog
        )
        self._threads: list[threading.Thread] = []
        self._closed = False

    @classmethod
    def open(
        cls,
        target: str | Path,
        *,
        settings: Settings | None = None,
        role: Role | None = None,
        role_name: str | None = None,
        descriptions: Path | None = None,
        name: str | None = None,
        probe: bool = True,
        tls: TLS | None = None,
        ssh: SSH | None = None,
    ) -> Environment:
        """Open a database (URL, file path or `demo`) read-only and wrap it, as the policy's role when one is set.

        `name` is the source's name (default: the file's stem or the URL's database). With `probe` (the
        default) the database is reached and its schema read now, so that a bad target or policy fails here; a
        server passes False, starts at once, and reads the schema in the background. `tls`: a source's TLS
        options (engines/tls.py); `ssh`: the SSH server it is reached through (engines/ssh.py)."""
        settings = settings or Settings()
        if descriptions is not None and not Path(descriptions).is_dir():
            raise ConfigError(
                f"the descriptions folder {descriptions} does not exist.",
                hint="Give the folder that holds BIRD-style <table>.csv files (database_description/).",
            )
        if str(target) == "demo":  # the embedded HR database, as on the command line
            from importlib import resources

            target = Path(str(resources.files("sophrosyne") / "data" / "demo.sqlite"))
        policy = load_policy(settings.paths.policy_file) if settings.paths.policy_file else None
        if role is None and policy is not None:
            role = policy.role(role_name) if role_name else policy.default_role
        elif role_name and policy is None:
            raise ConfigError(
                f"--role {role_name} needs a policy file.", hint="Pass --policy FILE or set SOPHROSYNE_POLICY_FILE."
            )
        database = open_database(target, settings, name=name, probe=probe, tls=tls, ssh=ssh)
        if policy is not None:
            try:
                check_statements(policy.tools, database.dialect)  # at start, even before the schema is read
            except BaseException:
                database.close()
                raise
        env = cls(database, settings=settings, role=role, descriptions=descriptions)
        env.policy = policy
        if probe and policy is not None:
            try:
                _ = env.full_catalog  # checks the policy against the schema
            except BaseException:
                database.close()  # a refused policy leaves no connection behind
                raise
        return env

    def for_role(self, role: Role, caller: str = "") -> Environment:
        """The same database, catalog and caches, seen by another role (kept, so each role is set up once).

        `caller`: for a role whose row filters read the caller's claims, who calls (claims.caller_key): each
        caller gets a view of its own, so values read for one (the grounder's cache) never reach another."""
        if role is self.role and caller == self.caller:
            return self
        key = f"{role.name}\x00{caller}" if caller else role.name
        with self._lock:
            env = self._role_envs.get(key)
            if env is None or env.role is not role:
                env = Environment(
                    self.db, settings=self.settings, role=role, descriptions=self.descriptions, values=self.values
                )
                env.binding = self.binding
                env.policy = self.policy
                env.caller = caller
                if caller:
                    self._forget_a_caller()
                self._role_envs[key] = env
            return env

    def _forget_a_caller(self) -> None:
        """Keep at most CALLER_VIEWS callers' views (each holds its own caches): the oldest goes first; its
        background threads are joined at close like this view's own."""
        callers = [key for key in self._role_envs if "\x00" in key]
        if len(callers) >= CALLER_VIEWS:
            gone = self._role_envs.pop(callers[0])
            self._threads.extend(gone._threads)

    @property
    def name(self) -> str:
        """The source's name: the file's stem, the URL's database, or the name it was opened with."""
        return self.db.name

    @property
    def url(self) -> str:
        """The database's URL as shown to people: without its password."""
        return self.db.display_url

    @property
    def dialect(self) -> str:
        return self.db.dialect

    @property
    def full_catalog(self) -> Catalog:
        """The database's catalog, current (see schema/live.py): what this environment derives is redone when
        the schema changes."""
        catalog = self.db.catalog()
        if catalog is not self._seen:
            if self.descriptions is not None:
                load_bird_descriptions(catalog, self.descriptions)
            # The policy is checked (the first time) and what appeared since is held back from restricted roles.
            admitted = self.binding.admit(catalog, self.policy)
            changed = self._seen is not None
            self._seen, self._admitted, self._catalog, self._moderator = catalog, admitted, None, None
            if changed and self.settings.inference.directives == "directives":
                # The schema changed under a running server: its indexes are rebuilt now, not at the next question.
                self._in_background("sophrosyne-rewarm")
        return catalog

    @property
    def catalog(self) -> Catalog:
        """The catalog as this role sees it."""
        policed = self._policed_catalog
        if self._catalog is None:
            self._catalog = restrict(self.role, policed)
        return self._catalog

    @property
    def _policed_catalog(self) -> Catalog:
        """The catalog this role's rules apply to: the full one, less (for a restricted role) the tables and
        columns that appeared after the policy was checked."""
        full = self.full_catalog
        return full if self.role.unrestricted or self._admitted is None else self._admitted

    # -- the tools of tools/registry.py: each is its module's function, called with this environment as `env`;
    # a line each, so that the Python API is typed (a test holds them to the registry) ----------------------

    list_sources = bounded_call(list_sources)
    list_tables = bounded_call(list_tables)
    describe_table = bounded_call(describe_table)
    get_distinct_values = bounded_call(get_distinct_values)
    find_rows = bounded_call(find_rows)
    execute_sql = bounded_call(execute_sql)
    explain_sql = bounded_call(explain_sql)
    search_schema = bounded_call(search_schema)
    export_sql = bounded_call(export_sql, lambda settings: settings.exports.export_timeout_s)

    # The tools a policy file declares ([[tools]]): each runs as this role, its values bound by the driver.
    run_declared = bounded_call(run_declared)

    @property
    def declared_tools(self) -> list[DeclaredTool]:
        """The tools the policy file declares for this role."""
        return self.policy.tools_of(self.role) if self.policy is not None else []

    @property
    def grounder(self) -> Grounder:
        if self._grounder is None:
            self._grounder = Grounder(
                self.secure, self.settings, self.values, scope=(self.name, self.role.name + self.caller)
            )
        return self._grounder

    def index_leads(self) -> dict[str, set[str]] | None:
        return self.db.index_leads()

    @property
    def schema_ready(self) -> bool:
        """Whether the database's schema is read: a call would not wait for it."""
        return self.db.catalog_ready

    def start_reading(self) -> None:
        """Start reading the schema in the background (a server answers at once and reads meanwhile)."""
        self.db.start_reading_catalog()

    def read_schema(self) -> None:
        """Read the schema now, waiting for a reading in progress; raises what the reading met."""
        self.db.catalog()

    def warm(self, wait: bool = False) -> None:
        """Read the schema and build (or load) the directive indexes now, in the background; with `wait`,
        block until they are ready: tools are bounded by `timeout_s`, and a first call on a fresh database
        would otherwise answer without directives while they build (a benchmark waits here first)."""
        self.db.start_reading_catalog()
        if self.settings.inference.directives != "directives":
            if wait:
                _ = self.catalog
        elif wait:
            self.moderator.warm(wait=True)
        else:
            self._in_background("sophrosyne-warm")

    def _in_background(self, name: str) -> None:
        with self._lock:
            if self._closed:
                return
            thread = threading.Thread(target=self._warm_moderator, name=name, daemon=True)
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _warm_moderator(self) -> None:
        try:
            self.moderator.warm(wait=False)
        except Exception as exc:  # the first call that needs them reports the error itself
            if not self._closed:
                logger.warning("could not prepare the directive indexes in advance: %s", exc)

    def close(self) -> None:
        """Close the database (every role's view of it) and wait a moment for the indexes being built in the
        background, which stop at their next statement; closing again does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            views = [self, *self._role_envs.values()]
        for env in views:
            if env._moderator is not None:
                env._moderator.stopped = True  # its background join checks stop before the database closes
        self.db.close()
        for env in views:
            env._closed = True
            for thread in env._threads:
                thread.join(CLOSE_WAIT_S)

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_oracle(self, gold_sql: str | None) -> None:
        """For experiments: the reference SQL that `oracle` directives are computed from."""
        self.moderator.oracle_sql = gold_sql

    @property
    def moderator(self) -> Moderator:
        catalog = self.catalog  # read first: a changed schema resets the moderator
        with self._lock:
            if self._moderator is None:
                # Imported here: directives and their indexes are not needed to run SQL, and load slowly.
                from sophrosyne.directives.moderator import Moderator

                self._moderator = Moderator(
                    catalog,
                    self.settings,
                    self.secure.distinct_values,
                    self.dialect,
                    shared=self.role.unrestricted,
                    probe=self.secure.held_values,
                )
            return self._moderator

    # -- join inference (sophrosyne.schema.joins) -------------------------------------------------------------------

    def inferred_joins(self) -> dict[str, list[ForeignKey]]:
        """Joins the schema does not declare, inferred for this role (names, confirmed by values within
        `join_inference_s`), by table; shown marked as inferred. Declared keys win: none is repeated here."""
        by_table: dict[str, list[ForeignKey]] = {}
        try:
            prepared = self.moderator.prepared
        except NotReady:
            return by_table  # still inferring on a large schema: shown once ready, never worth a late answer
        for join in prepared.joins.joins:
            by_table.setdefault(join.table, []).append(join.as_foreign_key())
        return by_table

    def complete_joins(self) -> JoinInference:
        """Check by their values every inferred join that `join_inference_s` left unchecked, and save them in
        the cache folder for the next start (`sophrosyne index` does this; a server does it after a first
        answer, in the background)."""
        return self.moderator.complete_joins()

    # -- the one secured path (sql/secure.py) --------------------------------------------------------------

    def _secure(self, sql: str, *, limit: int, timeout_s: float | None = None, explain: bool = False) -> Secured:
        # The tools call self.secure; this name stays for the tests that probe the path as they always did.
        return self.secure.run(sql, limit=limit, timeout_s=timeout_s, explain=explain)

    def reminder(self, tables: list[str]) -> str | None:
        """What directives remind of these tables; without a moderator set up there is nothing to remind."""
        return self._moderator.reminder(tables) if self._moderator is not None else None
