"""The bench commands for a new user (issue 21, items 5-6): a report without the `bench` extra, and datasets
that are not where the command looks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fixtures.bench_model import PRICES, bench_agent, plans_for
from fixtures.datasets import shared_datasets
from fixtures.openai_server import scripted_server
from sophrosyne.bench.cli.app import bench_app
from sophrosyne.bench.data.registry import load_suite

# The command as a user without matplotlib runs it: the import fails as it does when the package is absent.
WITHOUT_MATPLOTLIB = "import sys; sys.modules['matplotlib'] = None; from sophrosyne.cli.app import app; app()"


def without_matplotlib(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_MATPLOTLIB, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def test_bench_report_without_matplotlib_writes_the_page_and_says_how_to_get_plots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared_datasets("bird_dev")
    run = tmp_path / "run.jsonl"
    with scripted_server(bench_agent(plans_for(load_suite("bird-dev")))) as (url, _):
        for key, value in {
            "SOPHROSYNE_MODEL": "scripted",
            "SOPHROSYNE_BASE_URL": url,
            "SOPHROSYNE_API_KEY": "test",
            "SOPHROSYNE_LLM_PRICES": json.dumps(PRICES),
        }.items():
            monkeypatch.setenv(key, value)
        args = ["run", "--dataset", "bird-dev", "--db", "superhero", "--limit", "1", "--arm", "none", "--quiet"]
        result = CliRunner().invoke(bench_app, [*args, "--out", str(run)], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
    page = tmp_path / "report.html"
    done = without_matplotlib("bench", "report", str(run), "--html", str(page), "--no-curve")
    assert done.returncode == 0, done.stderr
    assert "unexpected" not in done.stderr
    assert "the page has no plots: matplotlib is not installed (pip install 'sophrosyne[bench]')" in done.stderr
    html = page.read_text()
    assert "<svg" not in html and "No plots: matplotlib is not installed" in html and '"key": "none/' in html
    # Without the datasets folder the page is written from the run alone; only the directive curve is left out.
    elsewhere = {**os.environ, "SOPHROSYNE_DATASETS": str(tmp_path / "no-datasets")}
    page.unlink()
    done = without_matplotlib("bench", "report", str(run), "--html", str(page), env=elsewhere)
    assert done.returncode == 0, done.stderr
    assert "note: the page has no directive curve (it needs the run's dataset)" in done.stderr
    assert '"key": "none/' in page.read_text()


def test_bench_directives_plot_without_matplotlib_names_the_install_line(tmp_path: Path) -> None:
    shared_datasets("spider")
    args = ["bench", "directives", "--dataset", "spider-dev", "--limit", "2", "--quiet", "--plot"]
    done = without_matplotlib(*args, str(tmp_path / "curve.png"))
    assert done.returncode == 1
    assert done.stderr.startswith("error: --plot needs matplotlib, which is not installed.")
    assert "pip install 'sophrosyne[bench]'" in done.stderr


@pytest.mark.parametrize(
    ("command", "dataset", "folder"),
    [
        ("directives", "bird-dev", "bird_dev"),
        ("directives", "spider-dev", "spider"),
        ("directives", "spider2-cloud", "spider2_lite"),
        ("score", "bird-dev", "bird_dev"),
        ("score", "bird-mini-dev", "bird_mini_dev"),
        ("run", "spider-dev", "spider"),
    ],
)
def test_a_missing_dataset_says_where_it_was_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, dataset: str, folder: str
) -> None:
    monkeypatch.setenv("SOPHROSYNE_DATASETS", str(tmp_path / "nowhere"))
    extra = {"directives": [], "score": ["--predictions", str(tmp_path / "p.json")], "run": ["--out", "r.jsonl"]}
    result = CliRunner().invoke(bench_app, [command, "--dataset", dataset, *extra[command]], env={"COLUMNS": "300"})
    assert result.exit_code == 1
    first, hint = result.stderr.splitlines()[:2]
    assert first == f"error: no data for {dataset}: the folder {tmp_path / 'nowhere' / folder} does not exist."
    assert hint.startswith(f"hint: Put the {dataset} files in {folder}/") and "SOPHROSYNE_DATASETS" in hint


def test_an_installed_package_looks_for_datasets_in_the_current_folder(tmp_path: Path) -> None:
    # Outside a source checkout the project root is the venv's site-packages: no `../shared/datasets` there.
    from sophrosyne.bench.data import folders

    installed = tmp_path / "lib" / "python3.11" / "site-packages"
    assert folders.datasets_root(installed) == installed.parent / "shared" / "datasets"  # an explicit root stays
    code = (
        "import os, pathlib, sophrosyne.bench.data.folders as d; os.environ.pop('SOPHROSYNE_DATASETS', None); "
        "d.__file__ = str(pathlib.Path(os.environ['FAKE']) / 'sophrosyne' / 'bench' / 'data' / 'folders.py'); "
        "print(d.datasets_root())"
    )
    here = str(Path(folders.__file__).resolve().parents[3])  # the folder this test imported sophrosyne from
    env = {**os.environ, "FAKE": str(installed), "PYTHONPATH": here}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, check=True
    )
    assert done.stdout.strip() == str(tmp_path / "datasets")
