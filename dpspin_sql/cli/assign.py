"""`dpspin assign` and `dpspin assignments load`: the assignment map, fitted or brought along."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from dpspin_sql import store
from dpspin_sql.cli.common import DB, out, progress_bar

app = typer.Typer()
assignments_app = typer.Typer(help="Bring-your-own-classifier assignments (record_id, atom_id, weight).",
                              no_args_is_help=True)


@app.command("assign")
def assign_cmd(db: Path = DB,
               scorer: str = typer.Option("similarity", "--scorer",
                                          help="similarity | supervised | keyword | embedding | embedding-supervised "
                                               "(the last two need the embed extra)"),
               K: int = typer.Option(3, "-K", help="Atoms kept per record."),
               centroid: bool = typer.Option(True, "--centroid/--no-centroid",
                                             help="similarity/embedding: add auxiliary centroids to the atom texts."),
               renormalise: bool = typer.Option(True, "--renormalise/--no-renormalise",
                                                help="Scale each record's kept top-K scores to sum 1 (its full unit of "
                                                     "mass); --no-renormalise keeps them as they are (scaled down "
                                                     "only above 1)."),
               evaluate: bool = typer.Option(False, "--evaluate/--no-evaluate",
                                             help="Also report top-1 accuracy and top-10 overlap (metadata dictionaries)."),
               as_json: bool = typer.Option(False, "--json/--no-json", help="Print the report as JSON.")) -> None:
    """Fit the assignment map on the auxiliary split and assign every target record (top-K, L1 ≤ 1)."""
    from dpspin_sql import assign

    assign.check_K(K)
    con = store.connect(db)
    opts: dict = {"centroid": False} if not centroid and scorer in ("similarity", "embedding") else {}
    if not renormalise:
        opts["renormalise"] = False
    total = assign.count_target(con)
    with progress_bar(disable=as_json) as bar:
        task = bar.add_task(f"fitting the {scorer} scorer on the auxiliary split", total=None)

        def progress(n: int) -> None:
            if bar.tasks[task].total is None:
                bar.update(task, description="assigning", total=total, completed=0)
            bar.advance(task, n)

        report = assign.assign(con, scorer, K, progress=progress, **opts)
    result = report.as_dict()
    if evaluate:
        result["evaluation"] = assign.evaluate(con, K=K)
    if as_json:
        out.print_json(json.dumps(result))
        return
    out.print(f"assigned {report.n_assigned} of {report.n_records} records with {report.scorer} (K={K}, m={report.m}); "
              f"{report.n_unassigned} scored no atom; {report.n_rows} rows in {report.seconds}s")
    if evaluate:
        ev = result["evaluation"]
        out.print(f"top-1 accuracy {ev['top1_accuracy']} on {ev['n_true_in_dictionary']} target records whose "
                  f"combination is an atom; top-{ev['L']} overlap {ev['overlap_at_L']}/{ev['L']}")


@assignments_app.command("load")
def assignments_load(db: Path = DB,
                     input: Path = typer.Option(..., "--input",
                                                help="CSV/JSON Lines/Parquet (or a folder of them) with record_id, "
                                                     "atom_id, weight."),
                     replace: bool = typer.Option(False, "--replace/--no-replace",
                                                  help="Replace the assignments already in the store."),
                     format: Optional[str] = typer.Option(None, "--format",
                                                          help="csv|jsonl|parquet (default: from the name)."),
                     delimiter: Optional[str] = typer.Option(None, "--delimiter",
                                                             help="CSV field delimiter (default ',').")) -> None:
    """Load your own classifier's assignments. Bounds are enforced later by the sketch, not trusted here.

    Example: dpspin assignments load --db tickets.duckdb --input scores.parquet
    """
    from dpspin_sql.tabular import parse_delimiter

    sep = parse_delimiter(delimiter)
    con = store.connect(db)
    report = store.load_assignment_file(con, input, fmt=format, replace=replace, delimiter=sep)
    if report.replaced:
        out.print(f"replaced {report.replaced} assignment rows with {report.rows} from {input}", markup=False)
    else:
        out.print(f"loaded {report.rows} assignment rows", markup=False)
    for note in report.notes:
        out.print(note, markup=False)
