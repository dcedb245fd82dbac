"""The policy file: roles by name, the default role, and the bearer-token hashes that map to roles."""

from __future__ import annotations

import hashlib
import hmac
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sophrosyne.base.toml_lines import TomlLines
from sophrosyne.errors import ConfigError
from sophrosyne.schema.catalog import Catalog
from sophrosyne.sql.policy.claims import check_claims
from sophrosyne.sql.policy.identity import Identity, parse_identity
from sophrosyne.sql.policy.names import check_names, closest
from sophrosyne.sql.policy.roles import Role, TableRule
from sophrosyne.sql.policy.row_filter import parse_row_filter
from sophrosyne.sql.policy.tools import DeclaredTool, check_tools, parse_tools

_TOP_KEYS = {"default_role", "identity", "roles", "tokens", "tools"}
_ROLE_KEYS = {"description", "deny", "unlisted", "tables", "free_sql"}
_TABLE_KEYS = {"row_filter", "columns", "hidden"}
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


@dataclass
class Policy:
    """Roles by name, the default role, and bearer-token hashes that map to roles."""

    roles: dict[str, Role]
    default_role_name: str
    token_hashes: dict[str, str] = field(default_factory=dict)  # sha256 hex -> role name
    lines: TomlLines | None = None  # where each key is written, for errors that name the line
    tools: list[DeclaredTool] = field(default_factory=list)  # the [[tools]] of the file (policy/tools.py)
    identity: Identity | None = None  # the identity provider whose tokens give roles by claims (identity.py)

    def where(self, *keys: str, value: str | None = None) -> str:
        """`file:line` of a key (or of a value in it), to begin an error with; empty without a file."""
        return self.lines.where(*keys, value=value) if self.lines is not None else "the policy"

    def role(self, name: str) -> Role:
        try:
            return self.roles[name]
        except KeyError:
            where = f"policy file {self.lines.path}" if self.lines is not None else "the policy"
            raise ConfigError(f"no role `{name}` in {where}", hint=_roles_hint(name, self.roles)) from None

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
        """ConfigError, with the file and the line, when the policy names a table, column or role that the
        database does not have: a misspelt name must not leave the table it meant unguarded."""
        check_names(self.roles.values(), self.where, catalog)
        check_tools(self.tools, self.roles, catalog)
        check_claims(((r.name, r.claims_read()) for r in self.roles.values()), catalog.dialect)

    def tools_of(self, role: Role) -> list[DeclaredTool]:
        """The declared tools `role` gets."""
        return [tool for tool in self.tools if role.name in tool.roles]


def hash_token(token: str) -> str:
    """The sha256 hex digest stored in a policy file for a bearer token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def load_policy(path: str | Path) -> Policy:
    """Read a TOML policy file; ConfigError names the file and the key that is wrong."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except FileNotFoundError:
        raise ConfigError(f"policy file {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"policy file {path} is not valid TOML: {error}") from None
    lines = TomlLines(path, text)
    try:
        return parse_policy(data, lines)
    except ConfigError as error:
        if error.message.startswith(str(path)):
            raise
        raise ConfigError(f"{path}: {error.message}", hint=error.hint) from None


def parse_policy(data: dict[str, Any], lines: TomlLines | None = None) -> Policy:
    """Build a Policy from parsed TOML (a dict); `lines` says where each key is written, for errors."""
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
        at = f"{lines.where('default_role')}: " if lines else ""
        raise ConfigError(f"{at}`default_role` names unknown role `{default}`", hint=_roles_hint(default, roles))
    tokens: dict[str, str] = {}
    for digest, role in _typed(data.get("tokens", {}), dict, "tokens").items():
        if not _SHA256_HEX.match(digest):
            raise ConfigError(
                f"tokens: `{digest[:12]}...` is not a sha256 hex digest",
                hint="store sha256(token) in lower-case hex, never the token itself",
            )
        if _typed(role, str, f"tokens.{digest[:12]}") not in roles:
            at = f"{lines.where('tokens', digest)}: " if lines else ""
            raise ConfigError(f"{at}tokens: a token maps to unknown role `{role}`", hint=_roles_hint(role, roles))
        tokens[digest] = role
    tools = parse_tools(data.get("tools", []), roles, _entries(lines, "tools"))
    identity = parse_identity(data["identity"], roles) if "identity" in data else None
    for role in sorted(set(tokens.values())):
        if claims := roles[role].claims_read():
            # A static token carries no claims: every statement on such a table would be refused.
            raise ConfigError(
                f"tokens: a token maps to role `{role}`, whose row filters read the caller's claims "
                f"({', '.join(sorted(claims))}), which a static token has none of",
                hint="Give that role to callers through [[identity.rules]], or give the token another role.",
            )
    return Policy(
        roles=roles, default_role_name=default, token_hashes=tokens, lines=lines, tools=tools, identity=identity
    )


def _entries(lines: TomlLines | None, name: str) -> list[str]:
    """`file:line` of each `[[name]]` header of the file, in order."""
    if lines is None:
        return []
    header = re.compile(rf"^\s*\[\[\s*{re.escape(name)}\s*\]\]")
    return [f"{lines.path}:{number}" for number, line in enumerate(lines.lines, 1) if header.match(line)]


def _roles_hint(name: str, roles: dict[str, Role]) -> str:
    near = closest(name, sorted(roles))
    return (f"Did you mean `{near}`? " if near else "") + f"The roles are {', '.join(sorted(roles))}."


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
    free_sql = _typed(body.get("free_sql", True), bool, f"{where}.free_sql")
    return Role(name, tables, denied, unlisted_allowed=unlisted == "allow", description=description, free_sql=free_sql)


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
