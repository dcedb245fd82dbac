"""Spider 2.0-lite scoring: instances, gold result CSVs with their `_a/_b` variants, the comparison rules.

The rules follow xlang-ai/Spider2, spider2-lite/evaluation_suite/evaluate.py (`compare_pandas_table`,
`compare_multi_pandas_table`), which reads every CSV with pandas; `read_result_csv` types the cells the way
`pandas.read_csv` does, so that the comparison sees the same values."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sophrosyne.errors import ConfigError

# evaluate.py, compare_pandas_table: `tolerance = 1e-2` (absolute, through math.isclose).
TOLERANCE = 1e-2
# pandas.read_csv's default `na_values` (pandas 2.x and 3.x).
NA_VALUES = frozenset(
    {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A"}
    | {"NA", "NULL", "NaN", "None", "n/a", "nan", "null"}
)
_INT = re.compile(r"\s*[+-]?[0-9]+\s*", re.ASCII)
_NUMBER = r"[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|inf(?:inity)?"
_FLOAT = re.compile(rf"\s*[+-]?(?:{_NUMBER})\s*", re.IGNORECASE | re.ASCII)
_TRUE = frozenset({"True", "TRUE", "true"})
_FALSE = frozenset({"False", "FALSE", "false"})
# A gold file is `<instance_id>.csv` or `<instance_id>_<letter>.csv` (evaluate.py: `^{id}(_[a-z])?\.csv$`).
_VARIANT = re.compile(r"^(?P<id>.+?)(?:_(?P<variant>[a-z]))?\.csv$")

Kind = Literal["int", "float", "bool", "str", "empty"]


@dataclass
class ResultTable:
    """A result as pandas would hold it after `read_csv`: one kind per column, missing cells as None."""

    columns: list[str]
    cells: list[list[Any]]  # column-major: cells[j][i] is row i of column j
    kinds: list[Kind] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return len(self.cells[0]) if self.cells else 0

    def vectors(self, columns: list[int] | None = None) -> list[list[Any]]:
        """Column vectors as `frame.transpose().values.tolist()` gives them: a frame whose columns are all
        numbers and not all integers turns into floats; any other mix keeps each value's own type."""
        chosen = columns if columns else list(range(len(self.cells)))
        kinds = [self.kinds[j] for j in chosen]
        numeric = all(k in ("int", "float", "empty") for k in kinds)
        to_float = numeric and any(k != "int" for k in kinds)
        out = []
        for j in chosen:
            vector = self.cells[j]
            out.append([float(v) if to_float and v is not None else v for v in vector])
        return out


def read_result_csv(source: str | Path) -> ResultTable:
    """A result CSV (header first) typed as `pandas.read_csv` types it: blank lines skipped; its default NA
    strings missing; a column of integers is int (float when a cell is missing), of numbers float, of
    True/False words bool, anything else text."""
    text = Path(source).read_text(encoding="utf-8") if isinstance(source, Path) else source
    records = [r for r in csv.reader(io.StringIO(text)) if r and any(cell != "" for cell in r)]
    if not records:
        raise ConfigError("the result CSV has no header row.")
    header, body = records[0], records[1:]
    width = len(header)
    columns: list[list[str | None]] = [[] for _ in range(width)]
    for record in body:
        for j in range(width):
            cell = record[j] if j < len(record) else ""
            columns[j].append(None if cell in NA_VALUES else cell)
    cells: list[list[Any]] = []
    kinds: list[Kind] = []
    for raw in columns:
        kind, values = _typed(raw)
        kinds.append(kind)
        cells.append(values)
    return ResultTable(header, cells, kinds)


def _typed(raw: list[str | None]) -> tuple[Kind, list[Any]]:
    present = [v for v in raw if v is not None]
    if not present:
        return ("empty" if raw else "str"), [None] * len(raw)
    missing = len(present) < len(raw)
    if all(_INT.fullmatch(v) for v in present):
        if missing:
            return "float", [None if v is None else float(int(v)) for v in raw]
        return "int", [int(v) for v in present]
    if all(_FLOAT.fullmatch(v) for v in present):
        return "float", [None if v is None else float(v) for v in raw]
    if all(v in _TRUE or v in _FALSE for v in present):
        return ("str" if missing else "bool"), [None if v is None else v in _TRUE for v in raw]
    return "str", list(raw)


def _normalize(value: Any) -> Any:
    """Missing values count as 0, before sorting and comparing (evaluate.py at commit e12c5f1e, `normalize`)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return 0
    return value


def _sort_key(value: Any) -> tuple[bool, str, bool]:
    # The official key: numbers sort by their text, so 10 sorts before 9 on both sides alike.
    return (value is None, str(value), isinstance(value, (int, float)))


def vectors_match(gold: list[Any], predicted: list[Any], ignore_order: bool, tolerance: float = TOLERANCE) -> bool:
    """One gold column against one predicted column (evaluate.py, `vectors_match`): the same length and, pair
    by pair, numbers within `tolerance` (absolute) or values equal; sorted first when the order is ignored."""
    first = [_normalize(v) for v in gold]
    second = [_normalize(v) for v in predicted]
    if ignore_order:
        first, second = sorted(first, key=_sort_key), sorted(second, key=_sort_key)
    if len(first) != len(second):
        return False
    for a, b in zip(first, second, strict=True):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if not math.isclose(float(a), float(b), abs_tol=tolerance):
                return False
        elif a != b:
            return False
    return True


def table_matches(
    predicted: ResultTable, gold: ResultTable, condition_cols: list[int] | None, ignore_order: bool
) -> bool:
    """Every gold column (those of `condition_cols`, or all) equals some predicted column as a vector; extra
    predicted columns and column names do not matter (evaluate.py, `compare_pandas_table`)."""
    if condition_cols and any(not 0 <= j < len(gold.cells) for j in condition_cols):
        return False  # the official indexing error, caught there as a score of 0
    predicted_vectors = predicted.vectors()
    return all(any(vectors_match(g, p, ignore_order) for p in predicted_vectors) for g in gold.vectors(condition_cols))


@dataclass(frozen=True)
class Spider2Rule:
    """An instance's comparison rule from spider2lite_eval.jsonl."""

    condition_cols: list[Any]
    ignore_order: bool
    temporal: bool = False

    def per_variant(self, count: int) -> list[list[int]]:
        """The condition columns of each gold variant (compare_multi_pandas_table): none given means all
        columns; a list of lists gives each variant its own; one flat list applies to every variant."""
        cond = self.condition_cols
        if not cond or cond in ([[]], [None]):
            return [[] for _ in range(count)]
        if all(isinstance(c, list) for c in cond):
            return [list(cond[i]) if i < len(cond) else [] for i in range(count)]
        return [list(cond) for _ in range(count)]


@dataclass
class Spider2Gold:
    """Gold result CSVs (every accepted variant) and comparison rules, per instance."""

    rules: dict[str, Spider2Rule]
    variants: dict[str, list[Path]]

    def score(self, instance_id: str, predicted: ResultTable) -> int:
        """1 when the prediction matches any gold variant (evaluate.py, `compare_multi_pandas_table`)."""
        paths = self.variants[instance_id]
        rule = self.rules[instance_id]
        for path, cond in zip(paths, rule.per_variant(len(paths)), strict=True):
            if table_matches(predicted, read_result_csv(path), cond, rule.ignore_order):
                return 1
        return 0


def load_gold(folder: Path) -> Spider2Gold:
    """`spider2lite_eval.jsonl` and `gold_exec_result/` of a Spider 2.0-lite folder."""
    folder = Path(folder)
    rules: dict[str, Spider2Rule] = {}
    for line in (folder / "spider2lite_eval.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rules[row["instance_id"]] = Spider2Rule(
                row.get("condition_cols") or [], bool(row.get("ignore_order")), bool(row.get("temporal"))
            )
    variants: dict[str, list[Path]] = {}
    for path in sorted((folder / "gold_exec_result").glob("*.csv")):
        match = _VARIANT.match(path.name)
        if match and match.group("id") in rules:
            variants.setdefault(match.group("id"), []).append(path)
        elif match and match.group(0)[:-4] in rules:  # an id that itself ends in _<letter>
            variants.setdefault(match.group(0)[:-4], []).append(path)
    return Spider2Gold(rules, variants)
