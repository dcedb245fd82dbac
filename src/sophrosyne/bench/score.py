"""Scoring predictions against a suite's gold: each question's verdict, then the summary every bench JSON has."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sophrosyne.bench.data.types import Question, Suite
from sophrosyne.bench.execution import BIRD_TIMEOUT_S, SPIDER_TIMEOUT_S, Execution, Runner, Runners
from sophrosyne.bench.metrics import bird_ex, order_matters, soft_f1, spider_prepare, spider_result_eq, ves_reward
from sophrosyne.bench.predictions import Predictions
from sophrosyne.errors import ConfigError

Tick = Callable[[str, int, int], None]


@dataclass
class Verdict:
    """One question's score, and why it is what it is."""

    question: Question
    predicted: bool
    ex: int = 0
    soft_f1: float | None = None
    ves_reward: float | None = None
    error: str | None = None  # the prediction failed, timed out, or is missing
    gold_error: str | None = None  # the gold query failed here (it should not)
    rows: int | None = None
    gold_rows: int | None = None
    exploration: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        q = self.question
        data: dict[str, Any] = {
            "question_id": q.id,
            "db_id": q.db_id,
            "difficulty": q.difficulty,
            "predicted": self.predicted,
            "ex": self.ex,
            "soft_f1": self.soft_f1,
            "ves_reward": self.ves_reward,
            "error": self.error,
            "gold_error": self.gold_error,
            "rows": self.rows,
            "gold_rows": self.gold_rows,
        }
        if self.exploration is not None:
            data["exploration"] = self.exploration
        return data


@dataclass
class Scorer:
    """Scores SQL (or Spider 2.0 result tables) against one suite; gold results are run once and kept."""

    suite: Suite
    timeout_s: float | None = None
    ves_iterations: int = 0
    _runners: Runners = field(init=False)
    _gold: dict[str, Execution] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.ves_iterations == 1:
            raise ConfigError(
                "R-VES needs at least 2 timing runs per question.",
                hint="mini-dev drops ratios outside 3 standard deviations; with one run none remains (use 100).",
            )
        self._runners = Runners(self.suite.targets, lenient_text=self.suite.metric == "spider")

    @property
    def limit(self) -> float:
        if self.timeout_s is not None:
            return self.timeout_s
        return SPIDER_TIMEOUT_S if self.suite.metric == "spider" else BIRD_TIMEOUT_S

    def close(self) -> None:
        self._runners.close()

    def gold(self, question: Question) -> Execution:
        if question.id not in self._gold:
            sql = spider_prepare(question.sql) if self.suite.metric == "spider" else question.sql
            self._gold[question.id] = self._runners(question.db_id).run(sql, self.limit)
        return self._gold[question.id]

    def score_sql(self, question: Question, sql: str | None) -> Verdict:
        if self.suite.metric == "spider2":
            raise ConfigError(
                "Spider 2.0 SQL cannot run here: its BigQuery and Snowflake databases are not reachable.",
                hint="Score the result tables instead: a folder of <instance_id>.csv files.",
            )
        if not sql or not sql.strip():
            return Verdict(question, False, error="no prediction")
        runner = self._runners(question.db_id)
        gold = self.gold(question)
        if self.suite.metric == "spider":
            predicted = runner.run(spider_prepare(sql), self.limit)
        else:
            predicted = runner.run(sql, self.limit)
        verdict = Verdict(question, True, rows=len(predicted.rows) if predicted.ok else None)
        verdict.gold_rows = len(gold.rows) if gold.ok else None
        if not gold.ok:
            verdict.gold_error = gold.error
            return verdict
        if not predicted.ok:
            verdict.error = predicted.error
            if self.suite.metric == "bird":
                verdict.soft_f1 = 0.0
                verdict.ves_reward = 0.0 if self.ves_iterations else None
            return verdict
        if self.suite.metric == "spider":
            verdict.ex = int(spider_result_eq(gold.rows, predicted.rows, order_matters(spider_prepare(question.sql))))
            return verdict
        verdict.ex = bird_ex(predicted.rows, gold.rows)
        verdict.soft_f1 = soft_f1(predicted.rows, gold.rows)
        if self.ves_iterations:
            verdict.ves_reward = self._reward(runner, question.sql, sql) if verdict.ex else 0.0
        return verdict

    def _reward(self, runner: Runner, gold_sql: str, sql: str) -> float:
        """mini-dev's R-VES reward: gold time / predicted time, `ves_iterations` times, each on a fresh
        connection; a failure while timing scores 0 (its `except Exception`)."""
        try:
            ratios = []
            for _ in range(self.ves_iterations):
                predicted = runner.timed(sql, self.limit)
                gold = runner.timed(gold_sql, self.limit)
                ratios.append(gold / predicted if predicted > 0 else float("inf"))
        except Exception:
            return 0.0
        return ves_reward(ratios)

    def score_csv(self, question: Question, path: Path) -> Verdict:
        """A Spider 2.0 result CSV against the instance's gold variants."""
        from sophrosyne.bench.data.spider2_eval import read_result_csv

        if self.suite.spider2 is None:
            raise ConfigError(f"{self.suite.name} is scored by running SQL, not by result CSVs.")
        try:
            table = read_result_csv(path)
        except (ConfigError, OSError, UnicodeDecodeError) as exc:
            return Verdict(question, True, error=f"unreadable result CSV: {exc}")
        return Verdict(question, True, ex=self.suite.spider2.score(question.id, table), rows=table.rows)


def score_predictions(
    suite: Suite,
    predictions: Predictions,
    *,
    jobs: int = 2,
    timeout_s: float | None = None,
    ves_iterations: int = 0,
    tick: Tick | None = None,
) -> list[Verdict]:
    """A verdict for every question of the suite (a question with no prediction scores 0, as in the official
    scripts), in the suite's order."""
    if suite.metric == "spider2" and predictions.sql and not predictions.csv:
        raise ConfigError(
            "Spider 2.0 SQL cannot run here: its BigQuery and Snowflake databases are not reachable.",
            hint="Score the result tables instead: a folder of <instance_id>.csv files.",
        )
    if suite.metric != "spider2" and predictions.csv:
        raise ConfigError(f"{suite.name} scores SQL by running it: give .sql files, not result CSVs.")
    scorer = Scorer(suite, timeout_s, ves_iterations)
    done = 0
    total = len(suite.questions)

    def one(question: Question) -> Verdict:
        if question.id in predictions.csv:
            return scorer.score_csv(question, predictions.csv[question.id])
        if suite.metric == "spider2":
            return Verdict(question, False, error="no prediction")
        return scorer.score_sql(question, predictions.sql.get(question.id))

    verdicts: list[Verdict] = []
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for verdict in pool.map(one, suite.questions):
                verdicts.append(verdict)
                done += 1
                if tick is not None:
                    tick("score", done, total)
    finally:
        scorer.close()
    return verdicts


def _mean(values: Iterable[float | int | None]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return round(statistics.fmean(kept), 4) if kept else None


def summarize(verdicts: list[Verdict], metric: str, *, ves: bool = False) -> dict[str, Any]:
    """`questions` and `ex` (0 to 1) first, as in every bench JSON; BIRD adds Soft F1 (and R-VES when timed)."""
    summary: dict[str, Any] = {
        "questions": len(verdicts),
        "ex": _mean(v.ex for v in verdicts) or 0.0,
        "correct": sum(v.ex for v in verdicts),
        "predicted": sum(v.predicted for v in verdicts),
        "errors": sum(1 for v in verdicts if v.predicted and v.error),
        "timeouts": sum(1 for v in verdicts if v.error and v.error.startswith("timed out")),
        "gold_errors": sum(1 for v in verdicts if v.gold_error),
    }
    if metric == "bird":
        summary["soft_f1"] = _mean(v.soft_f1 if v.soft_f1 is not None else 0.0 for v in verdicts) or 0.0
        if ves:
            from sophrosyne.bench.metrics import r_ves

            summary["r_ves"] = round(r_ves(v.ves_reward or 0.0 for v in verdicts), 4)
    explored = [v.exploration for v in verdicts if v.exploration is not None]
    if explored:
        summary["exploration"] = exploration_summary(explored)
    return summary


def exploration_summary(explored: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over the questions whose exploration is known."""
    return {
        "questions": len(explored),
        "over_exploration": _mean(e["over_exploration"] for e in explored),
        "over_exploration_rate": _mean(1 if e["over_exploration"] else 0 for e in explored),
        "extra_final_tables": _mean(e["extra_final_tables"] for e in explored),
        "tool_calls": _mean(e["tool_calls"] for e in explored),
        "tokens_in": _mean(e.get("tokens_in") for e in explored),
        "tokens_out": _mean(e.get("tokens_out") for e in explored),
        "response_tokens": _mean(e.get("response_tokens") for e in explored),
        "wall_s": _mean(e["wall_s"] for e in explored),
        "cost": _mean(e.get("cost") for e in explored),
    }


def grouped(verdicts: list[Verdict], key: Callable[[Verdict], str], metric: str, ves: bool) -> dict[str, Any]:
    groups: dict[str, list[Verdict]] = {}
    for verdict in verdicts:
        groups.setdefault(key(verdict), []).append(verdict)
    return {name: summarize(items, metric, ves=ves) for name, items in sorted(groups.items())}
