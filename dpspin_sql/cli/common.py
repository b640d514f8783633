"""What every command shares: the console, the --db option, flag names and the budget line.

Commands are thin: they translate flags into library calls and print. Failures are
exceptions (`BadInput` → exit 2, `Refusal` → exit 1) that `dpspin_sql.cli.run` prints as
one line; a `RequestError` names the request *field*, which `FLAGS` turns back into the
flag the user typed.
"""
from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console

from dpspin_sql import ledger, names

# Piped or captured output is not cut to rich's default 80 columns: a script or a log reading
# a table gets whole cells (mechanism names, release ids, paths). A terminal keeps its width.
PIPE_WIDTH = 200
out = Console(soft_wrap=True, highlight=False,   # ids and paths stay on one line for scripts
              width=None if sys.stdout.isatty() else PIPE_WIDTH)
err = Console(stderr=True, soft_wrap=True, highlight=False)

def example(*lines: str) -> str:
    """A command's help epilog: "Example:" and one to three runnable command lines, shown as
    written (click's \\b keeps them unwrapped). tests/test_help_examples.py runs every one in
    a directory holding the files they name (tickets.duckdb, tickets.csv, taxonomy.csv,
    scores.csv, query.sql, private_plan.json, summary.txt, later.json)."""
    assert 1 <= len(lines) <= 3, "an example is one to three lines"
    return "\b\nExample:\n" + "\n".join(f"  {line}" for line in lines)


DB = typer.Option(..., "--db", help="The dpspin store (a DuckDB file).")

# ReleaseRequest field -> the flag that sets it (or how an error names it): dpspin_sql.names
FLAGS = {n.field: n.named for n in names.TABLE if n.flags or n.said}


def flag(default: bool, *names: str, help: str) -> bool:
    """A boolean option shown as --name/--no-name."""
    return typer.Option(default, *names, help=help)


def budget_line(con, dataset: str) -> str:
    st = ledger.status(con, dataset)
    comp = st.composition
    if comp is not None and comp.accountant == "zcdp" and comp.path == "zcdp" and comp.rho_limit is not None:
        return (f"budget left: ε={st.epsilon_remaining:.4g} of {st.epsilon_total:g}, δ={st.delta_total:g} "
                f"(zcdp accountant: ρ={comp.rho:.4g} spent of {comp.rho_limit:.4g})")
    return (f"budget left: ε={st.epsilon_remaining:.4g} of {st.epsilon_total:g}, "
            f"δ={st.delta_remaining:.3g} of {st.delta_total:g}"
            + (f" (accountant {st.accountant})" if st.accountant != "basic" else ""))


SQL_SETTINGS = {f: f"OPTIONS ({names.BY_FIELD[f].sql} = …)" for f in ("delta", "selection_fraction")}


def defaults_line(request, how: dict | None = None) -> str | None:
    """Privacy-relevant defaults the user did not set, said out loud with how to set them
    (`how`: field → where; the release flags by default, SQL_SETTINGS for a statement);
    first, any setting given that has no effect (δ for laplace), said as ignored."""
    how = how or FLAGS
    ignored = [f"{how.get(name, name)} is ignored: {request.mechanism} is pure ε-DP (δ = 0)"
               for name in getattr(request, "ignored", ()) if name == "delta"]
    said = []
    if "delta" in request.defaulted:
        said.append(f"δ = {request.delta:g} (default; set {how['delta']})")
    if "selection_fraction" in request.defaulted:
        said.append(f"selection fraction {request.selection_fraction:g} of ε for admission "
                    f"(default; set {how['selection_fraction']})")
    line = "; ".join(ignored + (["using " + ", ".join(said)] if said else []))
    return line or None


def progress_bar(*, disable: bool = False):
    """A progress display on stderr; off when stderr is not a terminal (logs and pipes get
    no control characters, and an error line stays the only line). A phase of unknown
    length (fitting) shows a spinner, a pulsing bar and the time elapsed; a counted phase
    adds "done/total" and the time remaining."""
    import sys

    from rich.progress import (
        BarColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Counted(ProgressColumn):
        def __init__(self, inner=None):
            super().__init__()
            self.inner = inner

        def render(self, task):
            if task.total is None:
                return Text("")
            if self.inner is not None:
                return self.inner.render(task)
            return Text(f"{int(task.completed)}/{int(task.total)}", style="progress.download")

    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), Counted(), TimeElapsedColumn(),
                    Counted(TimeRemainingColumn()), console=Console(stderr=True), transient=True,
                    disable=disable or not sys.stderr.isatty())


def existing_file(path: Path, what: str) -> Path:
    from dpspin_sql.errors import BadInput

    if not path.is_file():
        raise BadInput(f"{what} not found: {path}")
    return path
