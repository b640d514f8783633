"""CLI commands `dpspin split`, `dpspin atoms build` and `dpspin assign` (SPEC §9).

Thin wrappers: the library raises BadInput for bad input and cli.py turns it into one
line on stderr and exit 2.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from dpspin_sql import store
from dpspin_sql.errors import BadInput

out = Console()
DB = typer.Option(..., "--db", help="The dpspin store (a DuckDB file).")


def register(app: typer.Typer, atoms_app: typer.Typer) -> None:
    app.command("split")(split_cmd)
    app.command("assign")(assign_cmd)
    atoms_app.command("build")(build_cmd)


def split_cmd(db: Path = DB,
              unit: str = typer.Option(..., "--unit", help="record | user (user level: all of a user's records on one side)."),
              aux_fraction: float = typer.Option(0.5, "--aux-fraction", help="Share of units in the auxiliary split."),
              seed: int = typer.Option(0, "--seed", help="Public seed of the hash rule."),
              n_records: Optional[int] = typer.Option(None, "--n-records", help="Keep this many target records (record level)."),
              n_users: Optional[int] = typer.Option(None, "--n-users", help="Keep this many target users (user level)."),
              strict_sample_size: bool = typer.Option(False, "--strict-sample-size",
                                                      help="Fail rather than keep fewer units than asked."),
              as_json: bool = typer.Option(False, "--json", help="Print the split report as JSON.")) -> None:
    """Split records into auxiliary (public) and target (protected) by a seeded hash of the unit id."""
    from dpspin_sql import split

    con = store.connect(db)
    report = split.split(con, unit, aux_fraction, seed, n_records=n_records, n_users=n_users,
                         strict_sample_size=strict_sample_size)
    if as_json:
        out.print_json(json.dumps(report.as_dict()))
        return
    out.print(f"aux: {report.aux_records} records; target: {report.target_records} records"
              + (f" ({report.target_users} users)" if unit == "user" else "")
              + f"; excluded: {report.excluded_records}")
    if report.requested_units is not None and report.sampled_units < report.requested_units:
        out.print(f"[yellow]only {report.sampled_units} of {report.requested_units} {unit}s available[/yellow]")
    if report.invalidated:
        out.print(f"the aux split changed: the old {report.invalidated} was dropped; rebuild it")


def build_cmd(db: Path = DB,
              builder: str = typer.Option(..., "--builder", help="metadata | phrases"),
              fields: Optional[str] = typer.Option(None, "--fields", help="Metadata columns, e.g. product,issue,sub_issue."),
              profile: Optional[str] = typer.Option(None, "--profile", help="Phrase profile: beauty | restaurants | default | PATH."),
              m: Optional[int] = typer.Option(None, "-m", help="Atoms to keep (metadata default 50; phrases: all above the threshold)."),
              min_support: Optional[int] = typer.Option(None, "--min-support", help="Minimum auxiliary support."),
              manifest_out: Optional[Path] = typer.Option(None, "--manifest-out", help="Also write the manifest JSON here.")
              ) -> None:
    """Build the public atom dictionary from the auxiliary split only."""
    from dpspin_sql import atoms

    if builder == "metadata" and not fields:
        raise BadInput("--builder metadata needs --fields, e.g. --fields product,issue,sub_issue")
    con = store.connect(db)
    dictionary_id, manifest = atoms.build(con, builder, fields=fields.split(",") if fields else None,
                                          profile=profile, m=m, min_support=min_support, manifest_out=manifest_out)
    out.print(f"built {manifest['m']} atoms ({builder}) from {manifest['aux_records']} auxiliary records, "
              f"threshold {manifest['threshold']}; dictionary {dictionary_id}")
    if manifest_out:
        out.print(f"manifest written to {manifest_out}")


def assign_cmd(db: Path = DB,
               scorer: str = typer.Option("similarity", "--scorer",
                                          help="similarity | supervised | keyword | embedding | embedding-supervised "
                                               "(the last two need the [embed] extra)"),
               K: int = typer.Option(3, "-K", help="Atoms kept per record."),
               no_centroid: bool = typer.Option(False, "--no-centroid", help="similarity/embedding: atom texts only, no aux centroids."),
               no_renormalise: bool = typer.Option(False, "--no-renormalise",
                                                   help="Keep each record's top-K scores as they are (scaled down only "
                                                        "above 1) instead of scaling them to sum 1."),
               evaluate: bool = typer.Option(False, "--evaluate",
                                             help="Also report top-1 accuracy and top-10 overlap (metadata dictionaries)."),
               as_json: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Fit the assignment map on aux data and assign every target record (top-K, L1 ≤ 1)."""
    from dpspin_sql import assign

    if K < 1:
        raise BadInput(f"-K must be a positive integer, not {K}")
    con = store.connect(db)
    opts = {"centroid": False} if no_centroid and scorer in ("similarity", "embedding") else {}
    if no_renormalise:
        opts["renormalise"] = False
    total = assign.count_target(con)
    with Progress(TextColumn("assigning"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True, disable=as_json) as bar:
        task = bar.add_task("assign", total=total)
        report = assign.assign(con, scorer, K, progress=lambda n: bar.advance(task, n), **opts)
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
