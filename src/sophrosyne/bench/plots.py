"""The report's plots as inline SVG (matplotlib, text kept as text), so the HTML page needs nothing else."""

from __future__ import annotations

import io
import re
from typing import Any

# What to install when matplotlib is missing (it comes with the `bench` extra).
INSTALL = "pip install 'sophrosyne[bench]'"
COLORS = {"coarse": "#8c8c8c", "none": "#d95f02", "directives": "#1b9e77", "oracle": "#7570b3"}


def available() -> bool:
    """Whether matplotlib is installed (the page and the JSON are written without it, the plots not)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Same input, same file: fixed ids in the SVG, and text left as text (smaller, searchable).
    plt.rcParams.update({"svg.hashsalt": "sophrosyne", "svg.fonttype": "none", "font.size": 9})
    return plt


def _svg(figure: Any) -> str:
    plt = _pyplot()
    buffer = io.StringIO()
    figure.tight_layout()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(figure)
    text = buffer.getvalue()
    # The RDF block only names the file's format; the page needs none of it.
    return re.sub(r"<metadata>.*?</metadata>\s*", "", text[text.index("<svg") :], flags=re.DOTALL)


def _color(arm: str) -> str:
    return COLORS.get(arm, "#444444")


def bars_with_ci(title: str, ylabel: str, bars: list[tuple[str, float | None, float | None, float | None]]) -> str:
    """One bar per arm with its 95% interval: (arm, value, low, high)."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(4.2, 3.0))
    names = [b[0] for b in bars]
    values = [b[1] or 0.0 for b in bars]
    below = [max(0.0, (b[1] or 0.0) - b[2]) if b[2] is not None else 0.0 for b in bars]
    above = [max(0.0, b[3] - (b[1] or 0.0)) if b[3] is not None else 0.0 for b in bars]
    axes.bar(names, values, color=[_color(n) for n in names], yerr=[below, above], capsize=4)
    for i, value in enumerate(values):
        label = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
        axes.annotate(label, (i, value), ha="center", va="bottom", xytext=(0, 2), textcoords="offset points")
    axes.set_title(title)
    axes.set_ylabel(ylabel)
    axes.spines[["top", "right"]].set_visible(False)
    return _svg(figure)


def grouped_bars(title: str, ylabel: str, groups: dict[str, dict[str, float]], arms: list[str]) -> str:
    """Bars per group (difficulty, database), one per arm."""
    plt = _pyplot()
    width = 0.8 / max(1, len(arms))
    figure, axes = plt.subplots(figsize=(max(4.2, 0.9 * len(groups) + 1.5), 3.2))
    names = list(groups)
    for j, arm in enumerate(arms):
        xs = [i + (j - (len(arms) - 1) / 2) * width for i in range(len(names))]
        axes.bar(xs, [groups[g].get(arm, 0.0) for g in names], width, label=arm, color=_color(arm))
    axes.set_xticks(range(len(names)), names, rotation=30 if len(names) > 4 else 0, ha="right")
    axes.set_title(title)
    axes.set_ylabel(ylabel)
    axes.set_ylim(0, 1.3)  # room above the bars for the legend
    axes.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    axes.legend(fontsize=7, frameon=False, ncols=min(4, len(arms)), loc="upper center")
    axes.spines[["top", "right"]].set_visible(False)
    return _svg(figure)


def directive_curve(points: list[dict[str, float]], used: dict[str, float] | None) -> str:
    """Safe rate (no gold table flagged) against prune rate (irrelevant tables flagged) over the threshold."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(4.2, 3.2))
    xs = [p["prune_rate"] for p in points]
    ys = [p["safe_rate"] for p in points]
    axes.plot(xs, ys, marker="o", markersize=3, color=COLORS["directives"], label="directives over the threshold")
    for p in points[:: max(1, len(points) // 5)]:
        axes.annotate(
            f"{p['threshold']:g}",
            (p["prune_rate"], p["safe_rate"]),
            fontsize=7,
            xytext=(3, 3),
            textcoords="offset points",
        )
    if used:
        axes.scatter([used["prune_rate"]], [used["safe_rate"]], color="black", zorder=3, label="the run's setting")
    axes.scatter([1.0], [1.0], color=COLORS["oracle"], marker="*", s=60, zorder=3, label="oracle")
    axes.set_xlabel("prune rate")
    axes.set_ylabel("safe rate")
    axes.set_xlim(-0.02, 1.05)
    axes.set_ylim(min([*ys, 0.5]) - 0.05, 1.03)
    axes.set_title("Directive curve")
    axes.legend(fontsize=7, frameon=False, loc="lower left")
    axes.spines[["top", "right"]].set_visible(False)
    return _svg(figure)
