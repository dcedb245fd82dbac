"""The caller's claims in row filters: `owner_email = :claims.email` binds the verified token's claim as a
parameter of the statement (the driver's), never as text, and refuses the statement when the claim is absent.

A row filter's `:claims.NAME` is read once, when the filter is parsed, into a placeholder of a name no caller's
statement may use (`CLAIM_PREFIX` + NAME); the secured path (sql/secure.py) binds the caller's claims, which the
HTTP gate set for the request (`CLAIMS`), to those placeholders.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from typing import Any

from sqlglot import exp

from sophrosyne import engines
from sophrosyne.errors import AccessDenied, ConfigError

CLAIM_PREFIX = "sophrosyne_claim_"
CLAIM_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")

# The verified claims of the request's caller (set by the HTTP gate); None: the call carries no claims.
CLAIMS: ContextVar[Mapping[str, Any] | None] = ContextVar("sophrosyne_claims", default=None)


def claim_placeholder(node: exp.Expr, where: str) -> exp.Expr | None:
    """The placeholder `:claims.NAME` stands for, or None when `node` is not one; ConfigError for a bad name."""
    if not (isinstance(node, exp.Dot) and isinstance(node.this, exp.Placeholder) and node.this.this == "claims"):
        return None
    name = node.expression.name if isinstance(node.expression, exp.Identifier) else ""
    if not CLAIM_NAME.match(name):
        raise ConfigError(
            f"row filter of {where}: `:claims.{name}` is not a claim name",
            hint="Write `:claims.NAME` with NAME in lower case letters, digits and underscores, e.g. :claims.email.",
        )
    return exp.Placeholder(this=CLAIM_PREFIX + name)


def claims_used(tree: exp.Expr) -> set[str]:
    """The claim names whose placeholders `tree` holds."""
    return {
        node.this.removeprefix(CLAIM_PREFIX)
        for node in tree.find_all(exp.Placeholder)
        if isinstance(node.this, str) and node.this.startswith(CLAIM_PREFIX)
    }


def claim_values(names: set[str]) -> dict[str, Any]:
    """The values to bind for `names` (by placeholder name), from the caller's claims; AccessDenied when the
    call carries no claims or a claim is absent or not a plain value: a row filter never widens by default."""
    claims = CLAIMS.get()
    if claims is None:
        raise AccessDenied(
            "this role's row filter reads the caller's token claims, and this call carries none.",
            hint="Call over HTTP with a token of the server's identity provider.",
        )
    values: dict[str, Any] = {}
    for name in sorted(names):
        value = claims.get(name)
        if isinstance(value, bool) or not isinstance(value, str | int | float) or value == "":
            raise AccessDenied(
                f"your token has no usable `{name}` claim, which this role's row filter needs.",
                hint="Ask your identity provider's administrator to add the claim to your access token.",
            )
        values[CLAIM_PREFIX + name] = value
    return values


def check_claims(claims_by_role: Iterable[tuple[str, set[str]]], dialect: str | None) -> None:
    """ConfigError at start when a role's row filters read claims (role name, claims it reads) on an engine
    whose driver is not given parameters yet (DuckDB, Spark): every statement of such a role would be refused."""
    engine = engines.for_dialect(dialect or "sqlite")
    if engine.parameter_style is not None:
        return
    for name, claims in claims_by_role:
        if claims:
            raise ConfigError(
                f"role `{name}` has row filters reading the caller's claims ({', '.join(sorted(claims))}), "
                f"which do not run on {engine.name} yet.",
                hint="Use literal row filters on this source, or serve it from PostgreSQL, MySQL or SQLite.",
            )
