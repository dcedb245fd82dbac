"""The house by layers: every import points down, no module imports itself back, and each module stays small.

Every `import` and `from ... import` in the package counts, wherever it is written: at the top, inside a
function (a lazy import is still a dependency) and under `TYPE_CHECKING` (a type is a dependency too).
docs/architecture.md says what each layer is for.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "src" / "sophrosyne"

# Top to bottom. A module may import its own layer and the layers below it, never one above. A name stands for
# a module or a package (with everything in it); the longest name that covers a module gives its layer. The
# command mounts bench's sub-app, and both write to the one terminal: `cli.terminal` sits below bench. In the
# bench, the datasets are read lowest and its sub-app sits highest.
LAYERS = [
    "cli",
    "bench.cli",
    "bench",
    "bench.data",
    "cli.terminal",
    "agent",
    "serve",
    "sandbox",
    "environment sources",
    "directives",
    "index",
    "tools",
    "exports",
    "sql",
    "database",
    "engines",
    "schema",
    "settings audit llm",
    "errors base",
]
# The facade (`sophrosyne/__init__.py`, lazy names for the Python API) and `python -m sophrosyne` sit above
# every layer; nothing inside imports them.
TOP = {"sophrosyne", "sophrosyne.__main__"}
# The few modules at the top of the package; everything else lives in a package of its layer.
TOP_LEVEL_MODULES = {"__init__", "__main__", "errors", "settings", "audit", "llm", "database", "environment", "sources"}
MAX_LINES = 400


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["sophrosyne", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = modules()


def _home(name: str) -> str | None:
    """The module an imported name lives in (`sophrosyne.sql.guard.check_sql` -> `sophrosyne.sql.guard`)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> Iterator[tuple[str, int]]:
    """Every module of the package `module` imports, with the line, wherever the import is written."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            # `from a import b` imports module a.b when b is one, else a name of module a; either way it runs
            # and reads package a's __init__, so a counts too (but the facade, which every import runs first
            # and which imports nothing at run time, only when a name of its own is taken from it).
            modules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
            names = modules if base == "sophrosyne" and len(modules) == len(node.names) else [base, *modules]
        else:
            continue
        for name in names:
            home = _home(name)
            if home is not None and home != module:
                yield home, node.lineno


def layer(module: str) -> int:
    """The layer's index in LAYERS (0 is the top)."""
    best, found = -1, None
    for index, names in enumerate(LAYERS):
        for name in names.split():
            full = f"sophrosyne.{name}"
            if (module == full or module.startswith(full + ".")) and len(full) > best:
                best, found = len(full), index
    if found is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS (and to docs/architecture.md)")
    return found


def graph() -> dict[str, set[str]]:
    return {m: {target for target, _ in imports_of(m)} for m in MODULES}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles() -> None:
    assert circles(graph()) == []


def _named(module: str) -> str:
    return f"{module} ({'the facade' if module in TOP else LAYERS[layer(module)]})"


def test_every_import_points_down() -> None:
    upward = [
        f"{MODULES[m].relative_to(ROOT)}:{line}: {_named(m)} imports {_named(target)}"
        for m in sorted(MODULES)
        if m not in TOP
        for target, line in imports_of(m)
        if target in TOP or layer(target) < layer(m)
    ]
    assert upward == []


def test_circles_and_upward_imports_are_found() -> None:
    # The checks themselves, on a made-up graph and a made-up import: they must be able to fail.
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    assert layer("sophrosyne.sql.policy.rewrite") > layer("sophrosyne.environment")
    assert layer("sophrosyne.engines.base") < layer("sophrosyne.schema.catalog")


def test_no_module_is_over_the_size_limit() -> None:
    long = {str(p.relative_to(ROOT)): n for p in MODULES.values() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_few_modules_at_the_top() -> None:
    assert {p.stem for p in PACKAGE.glob("*.py")} <= TOP_LEVEL_MODULES


@pytest.mark.parametrize("package", sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()))
def test_tests_mirror_the_packages(package: str) -> None:
    # Tests of a package live in tests/<package>/; a package that needs no tests of its own says why here.
    assert (ROOT / "tests" / package).is_dir(), f"tests/{package}/ holds the tests of src/sophrosyne/{package}/"


def test_the_architecture_names_only_modules_that_exist() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:[a-z_]+/)*[a-z_]+(?:\.py|/))`", text))
    assert named, "docs/architecture.md names the modules in backquotes, as `sql/guard.py` or `tools/`"
    # A path from the project's root (tests/tools/) or, as most are, from the package's (sql/guard.py).
    missing = sorted(
        n for n in named if not (ROOT / n if n.split("/")[0] in {"src", "tests", "docs"} else PACKAGE / n).exists()
    )
    assert missing == []
    # Every layer of the contract is in the document, so the two cannot drift apart.
    for names in LAYERS:
        for name in names.split():
            assert f"`{name}" in text, f"docs/architecture.md does not mention the layer `{name}`"
