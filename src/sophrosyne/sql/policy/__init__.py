"""Roles, row-level security and column rules, applied by rewriting base tables as filtered CTEs."""

from sophrosyne.sql.policy.file import Policy, hash_token, load_policy, parse_policy
from sophrosyne.sql.policy.headers import shown_columns
from sophrosyne.sql.policy.rewrite import reads_fences, rewrite_for
from sophrosyne.sql.policy.roles import Role, TableRule
from sophrosyne.sql.policy.row_filter import parse_row_filter
from sophrosyne.sql.policy.view import restrict

__all__ = [
    "Policy",
    "Role",
    "TableRule",
    "hash_token",
    "load_policy",
    "parse_policy",
    "parse_row_filter",
    "reads_fences",
    "restrict",
    "rewrite_for",
    "shown_columns",
]
