"""`dpspin experiment run GRID.yaml [--out DIR] [--clean]` and `dpspin experiment report DIR`."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from dpspin_sql.cli.common import example, out
from dpspin_sql.errors import BadInput, DpspinError

app = typer.Typer(help="Grids of runs over the paper's datasets: metrics, grouped reports, plots.",
                  no_args_is_help=True, epilog=example("dpspin experiment report runs/smoke --no-plots"))


def _epsilons(text: str | None) -> list[float] | None:
    if not text:
        return None
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise BadInput(f"--epsilons must be a comma-separated list of numbers, not {text!r}") from None


@app.command("run", epilog=example("dpspin experiment run experiments/smoke.yaml --out runs/smoke --no-plots"))
def run_cmd(grid: Path = typer.Argument(..., help="Grid file (YAML), e.g. experiments/smoke.yaml."),
            out_dir: Optional[Path] = typer.Option(None, "--out", help="Output directory (default: runs/<grid name>)."),
            clean: bool = typer.Option(False, "--clean/--no-clean", help="Remove this directory's earlier runs first."),
            progress: bool = typer.Option(True, "--progress/--no-progress", help="Show the progress bar."),
            epsilons: Optional[str] = typer.Option("0.5,1,4", "--epsilons",
                                                   help="ε values of the printed table (all: empty)."),
            plots: bool = typer.Option(True, "--plots/--no-plots",
                                       help="Draw the plots (needs the plots extra)."),
            judge_base_url: Optional[str] = typer.Option(None, "--judge-base-url",
                                                         help="Score each summary with an LLM judge at this "
                                                              "OpenAI-compatible endpoint (off by default)."),
            judge_model: Optional[str] = typer.Option(None, "--judge-model", help="The judge's model name.")) -> None:
    """Run (or resume) a grid; write per-run artifacts, grouped tables, statistics and plots."""
    from dpspin_sql.experiment import report, runner
    from dpspin_sql.experiment.grid import load_grid

    if plots:
        from dpspin_sql.extras import require

        require("matplotlib")   # before any run, not after the whole grid

    g = load_grid(grid)
    for r in g.runs:   # the judge is evaluation only: it changes no run id and no release
        if judge_base_url:
            r["judge_base_url"] = judge_base_url
        if judge_model:
            r["judge_model"] = judge_model
    target = out_dir or Path("runs") / g.name
    out.print(f"grid {g.name}: {len(g.runs)} runs → {target}")
    res = runner.run_grid(g, target, clean_first=clean, show_progress=progress, plots=plots, console=out)
    eps = _epsilons(epsilons)
    tables = report.write_report(target, eps)
    typer.echo(report.to_markdown(tables["rows"], eps))
    if tables["probe_rows"]:
        typer.echo(report.probe_markdown(tables["probe_rows"]))
    out.print(f"{res.ok} run(s) done now, {res.done_before} already done, {res.failed} failed; "
              f"{res.seconds:.1f}s. Tables: {target / 'report'}" + (f"; plots: {target / 'plots'}" if plots else ""),
              markup=False)
    for run_id, message in res.failures[:10]:
        out.print(f"failed: {run_id}: {message}", markup=False)
    if res.failed:   # a grid with a failed run is not a success, whatever the tables show
        more = f" (the first {len(res.failures[:10])} are listed above)" if res.failed > 1 else ""
        raise RunsFailed(f"error: {res.failed} of {res.total} run(s) failed{more}; each failed run's error is in "
                         f"{target / 'runs'}/<run>/error.json; rerun to retry them")


class RunsFailed(DpspinError):
    """Some runs of a grid failed: exit 1, with the counts (the report covers the rest)."""

    exit_code = 1


@app.command("report", epilog=example("dpspin experiment report runs/smoke --no-plots"))
def report_cmd(run_dir: Path = typer.Argument(..., help="Output directory of `dpspin experiment run`."),
               epsilons: Optional[str] = typer.Option(None, "--epsilons",
                                                      help="Only these ε, e.g. 0.5,1,4 (default: all)."),
               plots: bool = typer.Option(True, "--plots/--no-plots",
                                          help="Redraw the plots (needs the plots extra).")) -> None:
    """Regroup a grid's finished runs and print the tables (also rewrites report/ and plots/)."""
    from dpspin_sql.experiment import plots as plots_mod
    from dpspin_sql.experiment import report

    if not (run_dir / "runs").is_dir():
        raise BadInput(f"{run_dir} has no runs/ directory (made by dpspin experiment run)")
    eps = _epsilons(epsilons)
    if plots:
        from dpspin_sql.extras import require

        require("matplotlib")
    tables = report.write_report(run_dir, eps)
    if plots:
        plots_mod.write_all(run_dir, tables)
    typer.echo(report.to_markdown(tables["rows"], eps))
    if tables["probe_rows"]:
        typer.echo(report.probe_markdown(tables["probe_rows"]))
    cmp_md = run_dir / "report" / "comparison.md"
    if cmp_md.exists():
        typer.echo(cmp_md.read_text(encoding="utf-8"))
    out.print(f"{tables['n_runs']} run(s), {tables['n_failed']} failed; tables in {run_dir / 'report'}",
              markup=False)
