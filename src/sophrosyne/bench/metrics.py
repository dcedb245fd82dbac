"""Execution metrics as the benchmarks' own evaluation code defines them: BIRD EX, Soft F1, R-VES, Spider EX.

Each rule names the file it follows; `tests/golden/metrics/` holds a hand-made case of every rule."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import product
from typing import Any

Row = tuple[Any, ...]


# -- BIRD ------------------------------------------------------------------------------------------------


def bird_ex(predicted: Sequence[Row], gold: Sequence[Row]) -> int:
    """1 when the sets of result rows are equal (bird-bench/mini_dev, evaluation/evaluation_ex.py,
    `calculate_ex`: `set(predicted_res) == set(ground_truth_res)`). Order and duplicates do not count;
    Python's equality decides, so 1 == 1.0 and a column order change is a different row."""
    return int(set(predicted) == set(gold))


def _row_match(predicted: Row, gold: Row) -> tuple[float, float, float]:
    """(matched, predicted-only, gold-only) cell shares of one row pair, over the gold row's width
    (evaluation/evaluation_f1.py, `calculate_row_match`): a cell matches when it is anywhere in the other row."""
    width = len(gold)
    matched = sum(1 for value in predicted if value in gold)
    predicted_only = len(predicted) - matched
    gold_only = sum(1 for value in gold if value not in predicted)
    return matched / width, predicted_only / width, gold_only / width


def soft_f1(predicted: Sequence[Row], gold: Sequence[Row]) -> float:
    """BIRD mini-dev's Soft F1 (evaluation/evaluation_f1.py, `calculate_f1_score`): both empty is 1.0;
    duplicate rows dropped keeping first-seen order (`dict.fromkeys`, the version that fixed the unordered
    `set` pairing reported in bird-bench/mini_dev issue 15); rows paired by position; extra rows on either side
    count fully against precision or recall."""
    if not predicted and not gold:
        return 1.0
    pred_rows = list(dict.fromkeys(predicted))
    gold_rows = list(dict.fromkeys(gold))
    tp = fp = fn = 0.0
    for i, gold_row in enumerate(gold_rows):
        if i >= len(pred_rows):
            fn += 1
            continue
        matched, predicted_only, gold_only = _row_match(pred_rows[i], gold_row)
        tp, fp, fn = tp + matched, fp + predicted_only, fn + gold_only
    fp += max(0, len(pred_rows) - len(gold_rows))
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def clean_outliers(ratios: Sequence[float]) -> list[float]:
    """Ratios strictly within three population standard deviations of their mean
    (evaluation/evaluation_ves.py, `clean_abnormal`, numpy's default `ddof=0`). When every ratio is equal the
    standard deviation is 0 and nothing is kept, as there."""
    if not ratios:
        return []
    mean = sum(ratios) / len(ratios)
    std = math.sqrt(sum((x - mean) ** 2 for x in ratios) / len(ratios))
    return [x for x in ratios if mean - 3 * std < x < mean + 3 * std]


def ves_reward(ratios: Sequence[float]) -> float:
    """The R-VES reward of one correct prediction from its gold/predicted time ratios
    (evaluation/evaluation_ves.py, `iterated_execute_sql`): the mean ratio after `clean_outliers`, then
    >= 2 gives 1.25, [1, 2) 1, [0.5, 1) 0.75, [0.25, 0.5) 0.5, else 0.25. When no ratio survives the cleaning,
    the official division by zero lands in its `except Exception` and the reward is 0: the same here."""
    kept = clean_outliers(ratios)
    if not kept:
        return 0.0
    ratio = sum(kept) / len(kept)
    if ratio == 0:
        return 0.0
    if ratio >= 2:
        return 1.25
    if ratio >= 1:
        return 1.0
    if ratio >= 0.5:
        return 0.75
    if ratio >= 0.25:
        return 0.5
    return 0.25


def r_ves(rewards: Iterable[float]) -> float:
    """Mean of sqrt(reward) over the questions (evaluation/evaluation_ves.py, `compute_ves`), on a 0-1 scale
    where the official prints it times 100; a wrong or failed prediction has reward 0."""
    values = list(rewards)
    return sum(math.sqrt(r) for r in values) / len(values) if values else 0.0


# -- Spider (test-suite execution match) -----------------------------------------------------------------

_CUR_YEAR = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.IGNORECASE)
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|\w+|\s+|.", re.DOTALL)


def remove_distinct(sql: str) -> str:
    """The statement without its DISTINCT keywords (taoyds/test-suite-sql-eval, parse.py `remove_distinct`,
    applied to both queries unless --keep_distinct): quoted text and names that merely contain the word stay."""
    return "".join(t for t in _TOKEN.findall(sql) if t.lower() != "distinct")


def spider_prepare(sql: str) -> str:
    """The rewrites exec_eval.py applies before running a query: `postprocess` (no space inside >=, <=, !=)
    and `replace_cur_year` (YEAR(CURDATE()) becomes 2020), then `remove_distinct`."""
    sql = sql.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")
    return remove_distinct(_CUR_YEAR.sub("2020", sql))


def order_matters(gold_sql: str) -> bool:
    """Rows are compared in order when the gold query sorts (exec_eval.py, `eval_exec_match`)."""
    return "order by" in gold_sql.lower()


def _unorder_row(row: Row) -> Row:
    return tuple(sorted(row, key=lambda x: str(x) + str(type(x))))


def _multiset_eq(first: Sequence[Row], second: Sequence[Row]) -> bool:
    return len(first) == len(second) and Counter(first) == Counter(second)


def spider_result_eq(gold: Sequence[Row], predicted: Sequence[Row], ordered: bool) -> bool:
    """Spider's denotation match (exec_eval.py, `result_eq`): the same number of rows and columns, and some
    permutation of the predicted columns under which the rows are equal as a bag (as a list when `ordered`).

    The official narrows the column permutations with 20 randomly sampled rows; that only removes
    permutations that cannot match, so narrowing with every row (as here) gives the same verdict without
    randomness."""
    if not gold and not predicted:
        return True
    if len(gold) != len(predicted):
        return False
    width = len(gold[0])
    if len(predicted[0]) != width:
        return False
    unordered_gold = [_unorder_row(r) for r in gold]
    unordered_pred = [_unorder_row(r) for r in predicted]
    if ordered and unordered_gold != unordered_pred:
        return False
    if not ordered and set(unordered_gold) != set(unordered_pred):
        return False
    gold_columns = [{row[i] for row in gold} for i in range(width)]
    candidates = [
        [j for j in range(width) if all(row[j] in gold_columns[i] for row in predicted)] for i in range(width)
    ]
    for permutation in product(*candidates):
        if len(set(permutation)) != width:
            continue
        permuted = predicted if width == 1 else [tuple(row[j] for j in permutation) for row in predicted]
        if ordered:
            if list(gold) == list(permuted):
                return True
        elif set(gold) == set(permuted) and _multiset_eq(gold, permuted):
            return True
    return False
