"""`sophrosyne bench`: benchmark commands (mounted into the main CLI as a sub-app).

Each command lives in its own module (directives, score, tokens, report, run); they import only Typer, Rich
and the terminal at first and load the heavy modules when the command runs.
"""

from __future__ import annotations

import typer

from sophrosyne.bench.cli import directives, report, run, score, tokens
from sophrosyne.cli.terminal import Command, Group

bench_app = typer.Typer(
    cls=Group,
    name="bench",
    help="Benchmarks on real text-to-SQL data. Example: sophrosyne bench directives --dataset bird-dev",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@bench_app.callback()
def bench() -> None:
    """Benchmarks on real text-to-SQL data.

    Example: sophrosyne bench directives --dataset spider-dev
    """


# In this order in `--help`.
bench_app.command("directives", cls=Command)(directives.directives_command)
bench_app.command("robustness", cls=Command)(directives.robustness_command)
bench_app.command("score", cls=Command)(score.score_command)
bench_app.command("tokens", cls=Command)(tokens.tokens_command)
bench_app.command("report", cls=Command)(report.report_command)
bench_app.command("run", cls=Command)(run.run_command)
bench_app.command("merge", cls=Command)(run.merge_command)

if __name__ == "__main__":
    bench_app()
