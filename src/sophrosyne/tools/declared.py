"""Tools declared in a policy file (sql/policy/tools.py), run: the caller's role must have the tool, its values are
checked, and its statement goes down the role's secured path with the values bound by the driver."""

from __future__ import annotations

from typing import Any

from sophrosyne.errors import AccessDenied
from sophrosyne.sql.policy.tools import DeclaredTool
from sophrosyne.tools.base import Context
from sophrosyne.tools.execute_sql import QueryOutput, rows_of


def run_declared(env: Context, tool: DeclaredTool, arguments: dict[str, Any]) -> QueryOutput:
    """Run `tool` with `arguments` as the role of `env`; AccessDenied when the policy does not give it that role."""
    role = env.secure.role
    if role.name not in tool.roles:
        raise AccessDenied(f"role `{role.name}` does not have the tool `{tool.name}`.")
    values = tool.values(arguments)
    limit = env.settings.limits.row_cap
    return rows_of(env, env.secure.run(tool.sql, limit=limit, values=values))
