"""The bench's floors: data/ imports nothing else of the bench, and nothing but cli/ imports cli/."""

from __future__ import annotations

import ast
from pathlib import Path

import sophrosyne.bench

BENCH = Path(sophrosyne.bench.__file__).parent


def _imports() -> dict[str, set[str]]:
    """Every bench module's imports of sophrosyne modules, those inside functions and TYPE_CHECKING too."""
    found: dict[str, set[str]] = {}
    for path in sorted(BENCH.rglob("*.py")):
        parts = path.relative_to(BENCH.parent.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        found[name] = {n for n in names if n.startswith("sophrosyne.")}
    return found


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_bench_data_imports_nothing_else_of_the_bench() -> None:
    wrong = {
        (module, target)
        for module, targets in _imports().items()
        if _within(module, "sophrosyne.bench.data")
        for target in targets
        if _within(target, "sophrosyne.bench") and not _within(target, "sophrosyne.bench.data")
    }
    assert not wrong


def test_only_the_bench_cli_imports_the_bench_cli() -> None:
    wrong = {
        (module, target)
        for module, targets in _imports().items()
        if not _within(module, "sophrosyne.bench.cli")
        for target in targets
        if _within(target, "sophrosyne.bench.cli")
    }
    assert not wrong
