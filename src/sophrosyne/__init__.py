"""Sophrosyne: a moderated data environment for SQL agents.

The Python API is the product: `Environment`, its settings, policy, errors and typed results. Names load
on first use, so `import sophrosyne` (and with it the CLI) stays quick.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from sophrosyne.base.version import __version__
from sophrosyne.tools.registry import TOOLS

_HOMES = {
    "sophrosyne.environment": "Environment",
    "sophrosyne.settings": "Settings",
    "sophrosyne.sources": "Sources SourceSpec load_sources",
    "sophrosyne.sql.policy": "Policy Role TableRule hash_token load_policy",
    "sophrosyne.errors": (
        "SophrosyneError ConfigError ConnectionFailed UnknownTable UnknownColumn UnknownSource InvalidArgument "
        "RejectedSQL "
        "SQLSyntaxError QueryTimeout QueryFailed AccessDenied"
    ),
    # Each tool's result models, as the registry of tools names them.
    **{entry.module: entry.exports for entry in TOOLS},
}
_HOME = {name: module for module, names in _HOMES.items() for name in names.split()}

__all__ = [
    "AccessDenied",
    "ColumnInfo",
    "ConfigError",
    "ConnectionFailed",
    "Directive",
    "DistinctValues",
    "Environment",
    "ExportOutput",
    "FoundRows",
    "InvalidArgument",
    "Policy",
    "QueryFailed",
    "QueryOutput",
    "QueryPlan",
    "QueryTimeout",
    "RejectedSQL",
    "Role",
    "SQLSyntaxError",
    "SchemaHit",
    "SchemaHits",
    "Settings",
    "SophrosyneError",
    "SourceInfo",
    "SourceList",
    "SourceRelevance",
    "SourceSpec",
    "Sources",
    "TableDescription",
    "TableGroupInfo",
    "TableList",
    "TableRows",
    "TableRule",
    "TableSummary",
    "UnknownColumn",
    "UnknownSource",
    "UnknownTable",
    "ValueCount",
    "__version__",
    "hash_token",
    "load_policy",
    "load_sources",
]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'sophrosyne' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from sophrosyne.environment import Environment
    from sophrosyne.errors import (
        AccessDenied,
        ConfigError,
        ConnectionFailed,
        InvalidArgument,
        QueryFailed,
        QueryTimeout,
        RejectedSQL,
        SophrosyneError,
        SQLSyntaxError,
        UnknownColumn,
        UnknownSource,
        UnknownTable,
    )
    from sophrosyne.settings import Settings
    from sophrosyne.sources import Sources, SourceSpec, load_sources
    from sophrosyne.sql.policy import Policy, Role, TableRule, hash_token, load_policy
    from sophrosyne.tools.describe_table import ColumnInfo, TableDescription
    from sophrosyne.tools.execute_sql import QueryOutput
    from sophrosyne.tools.explain_sql import QueryPlan
    from sophrosyne.tools.export_sql import ExportOutput
    from sophrosyne.tools.find_rows import FoundRows, TableRows
    from sophrosyne.tools.get_distinct_values import DistinctValues, ValueCount
    from sophrosyne.tools.list_sources import SourceInfo, SourceList, SourceRelevance
    from sophrosyne.tools.list_tables import Directive, TableGroupInfo, TableList, TableSummary
    from sophrosyne.tools.search_schema import SchemaHit, SchemaHits
