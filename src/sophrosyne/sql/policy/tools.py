"""Tools declared in a policy file (`[[tools]]`): a vetted statement with named, typed parameters, for the roles
that get it. Read with the policy, checked against the schema with it; a value is only ever bound by the driver.

    [[tools]]
    name = "absences_between"
    description = "Absences per department between two dates."
    roles = ["ops_manager"]
    sql = "SELECT department, COUNT(*) FROM absence_records WHERE absence_date BETWEEN :start AND :end GROUP BY 1"
    parameters = [
      { name = "start", type = "date", description = "First day." },
      { name = "end", type = "date", description = "Last day." },
    ]
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import sqlglot
from pydantic import Field
from sqlglot import exp
from sqlglot.errors import SqlglotError

from sophrosyne import engines
from sophrosyne.errors import ConfigError, InvalidArgument, SophrosyneError
from sophrosyne.schema.catalog import Catalog
from sophrosyne.sql import guard
from sophrosyne.sql.policy.roles import Role
from sophrosyne.sql.policy.view import restrict

TYPES = ("string", "integer", "number", "date", "enum")
_TOOL_KEYS = {"name", "description", "sql", "roles", "parameters"}
_PARAMETER_KEYS = {"name", "type", "description", "minimum", "maximum", "max_length", "values", "default"}
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
# A string parameter is a value, not a document, unless the tool says otherwise.
MAX_STRING = 1000
_NO_DEFAULT = object()


@dataclass(frozen=True)
class Parameter:
    """One named parameter of a declared tool: its type, bounds and default (absent: required)."""

    name: str
    type: str
    description: str
    minimum: Any = None
    maximum: Any = None
    max_length: int = MAX_STRING
    values: tuple[str, ...] = ()
    default: Any = _NO_DEFAULT

    @property
    def required(self) -> bool:
        return self.default is _NO_DEFAULT

    def annotation(self) -> Any:
        """The parameter as a typed, bounded, described argument (its JSON schema is the MCP tool's)."""
        bounds = {"ge": self.minimum, "le": self.maximum}
        kind: Any
        if self.type == "string":
            kind, bounds = str, {"max_length": self.max_length}
        elif self.type == "integer":
            kind = int
        elif self.type == "number":
            kind = float
        elif self.type == "date":
            kind = dt.date
        else:
            kind, bounds = Literal[self.values], {}
        field = Field(description=self.description, **{k: v for k, v in bounds.items() if v is not None})
        return Annotated[kind if self.required else kind | None, field]

    def check(self, value: Any) -> Any:
        """`value` as this parameter's type within its bounds, else InvalidArgument (a value from a caller, or a
        default from the file)."""
        if value is None and not self.required:
            value = self.default
        wrong = InvalidArgument(
            f"`{self.name}` must be {self._kind()}, not {str(value)[:40]!r}.", hint=f"{self.name}: {self.description}"
        )
        if self.type == "string":
            if not isinstance(value, str) or len(value) > self.max_length:
                raise wrong
        elif self.type == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                raise wrong
        elif self.type == "number":
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise wrong
            value = float(value)
        elif self.type == "date":
            value = _date(value, wrong)
        elif value not in self.values:
            raise wrong
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            raise wrong
        return value

    def _kind(self) -> str:
        if self.type == "enum":
            return "one of " + ", ".join(self.values)
        bounds = [f"at least {self.minimum}"] * (self.minimum is not None) + [f"at most {self.maximum}"] * (
            self.maximum is not None
        )
        kind = {"string": "text", "integer": "an integer", "number": "a number", "date": "a date (YYYY-MM-DD)"}
        return kind[self.type] + (f" ({', '.join(bounds)})" if bounds else "")


@dataclass(frozen=True)
class DeclaredTool:
    """A tool of the policy file: its statement runs down the caller's secured path, its values bound."""

    name: str
    description: str
    sql: str
    roles: tuple[str, ...]
    parameters: tuple[Parameter, ...]
    where: str  # `file:line` of its [[tools]] entry

    def values(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments checked, every parameter given a value (its default when left out)."""
        unknown = sorted(set(arguments) - {p.name for p in self.parameters})
        if unknown:
            raise InvalidArgument(f"{self.name} has no argument `{unknown[0]}`.")
        values = {}
        for parameter in self.parameters:
            given = arguments.get(parameter.name)
            if given is None and parameter.required:
                raise InvalidArgument(f"{self.name} needs `{parameter.name}`.", hint=parameter.description)
            values[parameter.name] = parameter.check(given)
        return values


def parse_tools(entries: Any, roles: dict[str, Role], at: list[str]) -> list[DeclaredTool]:
    """The `[[tools]]` of a policy file (`at`: `file:line` of each entry); ConfigError names the entry's line."""
    if not isinstance(entries, list):
        raise ConfigError("`tools` must be a list of [[tools]] tables.")
    tools = [_tool(entry, roles, at[i] if i < len(at) else "the policy") for i, entry in enumerate(entries)]
    names = [t.name for t in tools]
    for tool in tools:
        if names.count(tool.name) > 1:
            raise ConfigError(f"{tool.where}: a second tool is named `{tool.name}`.", hint="Give each tool its name.")
    return tools


def _tool(entry: Any, roles: dict[str, Role], where: str) -> DeclaredTool:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: a [[tools]] entry must be a table.")
    _keys(entry, _TOOL_KEYS, where, "tool")
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{where}: a tool's `name` is lower-case letters, digits and `_`, starting with a letter.")
    where = f"{where}: tool `{name}`"
    description, sql = entry.get("description"), entry.get("sql")
    if not isinstance(description, str) or not description.strip():
        raise ConfigError(f"{where} needs a `description`: the agent chooses tools by it.")
    if not isinstance(sql, str) or not sql.strip():
        raise ConfigError(f"{where} needs its `sql`: one read-only statement with :name parameters.")
    if "\x00" in sql:  # the character the secured path marks placeholders with (sql/secure.py)
        raise ConfigError(f"{where}: its sql holds a NUL character.")
    granted = entry.get("roles")
    if not isinstance(granted, list) or not granted or not all(isinstance(r, str) for r in granted):
        raise ConfigError(f"{where} needs `roles`: the roles that get it.", hint=f"Roles: {', '.join(sorted(roles))}.")
    for role in granted:
        if role not in roles:
            raise ConfigError(f"{where} names unknown role `{role}`.", hint=f"Roles: {', '.join(sorted(roles))}.")
    listed = entry.get("parameters", [])
    if not isinstance(listed, list):
        raise ConfigError(f"{where}: `parameters` must be a list of tables.")
    parameters = tuple(_parameter(p, where) for p in listed)
    declared = [p.name for p in parameters]
    for p in parameters:
        if declared.count(p.name) > 1:
            raise ConfigError(f"{where} declares parameter `{p.name}` twice.")
    used = placeholders_of(sql, where)
    for unused in sorted(set(declared) - used):
        raise ConfigError(f"{where} declares parameter `{unused}`, which its sql does not use (:{unused}).")
    for undeclared in sorted(used - set(declared)):
        raise ConfigError(f"{where}: its sql uses `:{undeclared}`, which is not a declared parameter.")
    return DeclaredTool(name, description.strip(), sql, tuple(granted), parameters, where)


def _parameter(entry: Any, where: str) -> Parameter:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: each parameter is a table (name, type, description).")
    _keys(entry, _PARAMETER_KEYS, where, "parameter")
    name, kind, description = entry.get("name"), entry.get("type"), entry.get("description")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{where}: a parameter's `name` is lower-case letters, digits and `_`.")
    where = f"{where}, parameter `{name}`"
    if kind not in TYPES:
        raise ConfigError(f"{where}: `type` must be one of {', '.join(TYPES)}, not {kind!r}.")
    if not isinstance(description, str) or not description.strip():
        raise ConfigError(f"{where} needs a `description`.")
    values = entry.get("values", [])
    if kind == "enum" and (not values or not all(isinstance(v, str) for v in values)):
        raise ConfigError(f"{where}: an enum lists its `values` (strings).")
    max_length = entry.get("max_length", MAX_STRING)
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
        raise ConfigError(f"{where}: `max_length` must be a positive integer.")
    bounds = {}
    for key in ("minimum", "maximum"):
        if key in entry:
            if kind not in ("integer", "number", "date"):
                raise ConfigError(f"{where}: `{key}` is for integer, number and date parameters.")
            probe = Parameter(name, kind, description)
            try:
                bounds[key] = probe.check(entry[key])
            except InvalidArgument:
                raise ConfigError(f"{where}: `{key}` must be {probe._kind()}, not {entry[key]!r}.") from None
    parameter = Parameter(name, kind, description.strip(), max_length=max_length, values=tuple(values), **bounds)
    if "default" in entry:
        try:
            default = parameter.check(entry["default"])
        except InvalidArgument as exc:
            raise ConfigError(f"{where}: its `default` is not valid: {exc.message}") from None
        parameter = Parameter(**{**parameter.__dict__, "default": default})
    return parameter


def placeholders_of(sql: str, where: str) -> set[str]:
    """The `:name` parameters a statement uses (parsed: a `:x` inside a string literal is text, not one)."""
    try:
        trees = sqlglot.parse(sql)
    except SqlglotError as exc:
        raise ConfigError(f"{where}: its sql does not parse: {str(exc).splitlines()[0][:200]}") from None
    if len(trees) != 1 or trees[0] is None:
        raise ConfigError(f"{where}: its sql must be exactly one statement.")
    names = set()
    for node in trees[0].find_all(exp.Placeholder):
        if not isinstance(node.this, str) or not node.this:
            raise ConfigError(f"{where}: its sql has a `?` parameter; name each one (:name).")
        names.add(node.name)
    return names


def check_statements(tools: list[DeclaredTool], dialect: str) -> list[exp.Expression]:
    """Each tool's statement as the guard reads it on this dialect: ConfigError, with the tool's file and line,
    for one the guard refuses (a write, several statements, a function it does not allow), and for any on an
    engine whose driver is not given values yet (DuckDB, Spark)."""
    engine = engines.for_dialect(dialect)
    if tools and engine.parameter_style is None:
        raise ConfigError(f"{tools[0].where}: tools declared in a policy file do not run on {engine.name} yet.")
    trees = []
    for tool in tools:
        try:
            trees.append(guard.check_sql(tool.sql, dialect))
        except SophrosyneError as exc:
            raise ConfigError(f"{tool.where}: its sql is refused: {exc.message}", hint=exc.hint) from None
    return trees


def check_tools(tools: list[DeclaredTool], roles: dict[str, Role], catalog: Catalog) -> None:
    """ConfigError with the tool's file and line when its statement is refused by the guard on this database's
    dialect, names a table or column the database lacks, or names one that a role the tool is for may not see
    (a hidden column, a denied table): the tool would show it, or fail at every call."""
    for tool, tree in zip(tools, check_statements(tools, catalog.dialect), strict=True):
        _resolve(tree, catalog, f"{tool.where}: its sql names what the database lacks")
        for name in tool.roles:
            role = roles[name]
            if not role.unrestricted:
                _resolve(tree, restrict(role, catalog), f"{tool.where}: role `{name}` may not see all it reads")


def _resolve(tree: exp.Expression, catalog: Catalog, problem: str) -> None:
    from sqlglot.optimizer.qualify import qualify  # only a policy with tools needs it (its import takes 40 ms)

    schema: dict[str, object] = {t.name: {c.name: c.type or "TEXT" for c in t.columns} for t in catalog.tables.values()}
    try:
        qualify(tree.copy(), schema=schema, dialect=catalog.dialect, validate_qualify_columns=True)
    except (SqlglotError, ValueError) as exc:
        raise ConfigError(f"{problem}: {str(exc).splitlines()[0][:200].rstrip('.')}.") from None


def _keys(entry: dict[str, Any], allowed: set[str], where: str, what: str) -> None:
    for key in entry:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown {what} key `{key}`.", hint=f"Keys: {', '.join(sorted(allowed))}.")


def _date(value: Any, wrong: InvalidArgument) -> dt.date:
    if isinstance(value, dt.datetime):
        raise wrong
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            raise wrong from None
    raise wrong
