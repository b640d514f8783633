"""`dpspin assign` and `dpspin assignments load`: the assignment map, fitted or brought along."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from dpspin_sql import store
from dpspin_sql.cli.common import DB, example, out, progress_bar

app = typer.Typer()
assignments_app = typer.Typer(help="Bring-your-own-classifier assignments (record_id, atom_id, weight).",
                              no_args_is_help=True,
                              epilog=example("dpspin assignments load --db tickets.duckdb --input scores.csv --replace"))


@app.command("assign", epilog=example("dpspin assign --db tickets.duckdb -K 3"))
def assign_cmd(db: Path = DB,
               scorer: str = typer.Option("auto", "--scorer",
                                          help="auto | keyword | similarity | supervised | embedding | "
                                               "embedding-supervised (the last two need the embed extra). auto: "
                                               "keyword for phrase atoms (a mass counts records that mention the "
                                               "theme), supervised for metadata atoms, similarity otherwise."),
               K: int = typer.Option(3, "-K", help="Atoms kept per record."),
               centroid: bool = typer.Option(True, "--centroid/--no-centroid",
                                             help="similarity/embedding: add auxiliary centroids to the atom texts."),
               calibrate: bool = typer.Option(True, "--calibrate/--no-calibrate",
                                              help="Fit per-atom relevance thresholds on the auxiliary split and give "
                                                   "mass only to atoms a record reaches (it may give none); "
                                                   "--no-calibrate is the old top-K rule, for comparison: every "
                                                   "record spends its unit whatever its scores."),
               renormalise: bool = typer.Option(True, "--renormalise/--no-renormalise",
                                                help="Give each record's kept atoms its whole unit (1/k each); "
                                                     "--no-renormalise gives 1/K each (uncalibrated: the raw scores, "
                                                     "scaled down only above 1)."),
               evaluate: bool = typer.Option(False, "--evaluate/--no-evaluate",
                                             help="Also report top-1 accuracy and top-10 overlap (metadata dictionaries)."),
               as_json: bool = typer.Option(False, "--json/--no-json", help="Print the report as JSON.")) -> None:
    """Fit the assignment map on the auxiliary split and assign every target record (≤ K atoms, total ≤ 1).

    A record gives mass only to the atoms it expresses by the scorer's calibrated
    thresholds, and none when it expresses none. The report says what one unit of mass
    is and how faithful the map is on held-out auxiliary records (precision: share of an
    atom's mass from records that express it; recall: share of those records assigned).
    """
    from dpspin_sql import assign

    assign.check_K(K)
    con = store.connect(db)
    opts: dict = {"centroid": False} if not centroid and scorer in ("similarity", "embedding") else {}
    if not renormalise:
        opts["renormalise"] = False
    if not calibrate:
        opts["calibrate"] = False
    total = assign.count_target(con)
    with progress_bar(disable=as_json) as bar:
        task = bar.add_task(f"fitting the {scorer} scorer on the auxiliary split and calibrating it", total=None)

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
    verb = "abstained (expressed no atom)" if report.calibrated else "scored no atom"
    out.print(f"assigned {report.n_assigned} of {report.n_records} records with {report.scorer} (K={K}, m={report.m}); "
              f"{report.n_unassigned} {verb}; {report.n_rows} rows in {report.seconds}s", highlight=False)
    out.print(f"one unit of mass: {report.mass_unit}", highlight=False)
    for line in fidelity_lines(report.fidelity, con):
        out.print(line, highlight=False)
    if evaluate:
        ev = result["evaluation"]
        out.print(f"top-1 accuracy {ev['top1_accuracy']} on {ev['n_true_in_dictionary']} target records whose "
                  f"combination is an atom ({ev['top1_accuracy_assigned']} on the {ev['n_true_assigned']} of them "
                  f"that gave mass); top-{ev['L']} overlap {ev['overlap_at_L']}/{ev['L']}")


def fidelity_lines(fid: dict | None, con, worst: int = 5) -> list[str]:
    """The fidelity part of the report: the totals, the documented minimum, the weakest atoms."""
    from dpspin_sql import relevance
    from dpspin_sql.atoms import current_atoms

    if not fid:
        return ["fidelity: not measured (uncalibrated map); masses need not come from records expressing their atom"]

    def f(x):
        return "n/a" if x is None else f"{x:.2f}"

    missed = relevance.below_minimum(fid)
    lines = [f"fidelity on {fid['records']} held-out auxiliary records: precision {f(fid['precision'])}, "
             f"recall {f(fid['recall'])} (per atom: mean precision {f(fid['macro_precision'])}, mean recall "
             f"{f(fid['macro_recall'])}); " + ("meets the documented minimum" if not missed else
                                                 "below the documented minimum: " + "; ".join(missed))]
    labels = {a.atom_id: a.label for a in current_atoms(con)}
    weak = sorted((a for a in fid.get("atoms", []) if a.get("precision") is not None),
                  key=lambda a: (a["precision"], a.get("recall") or 0, a["atom_id"]))[:worst]
    if weak and weak[0]["precision"] < relevance.FIDELITY_MIN["precision"]:
        lines.append("weakest atoms (precision / recall): " + "; ".join(
            f"{labels.get(a['atom_id'], a['atom_id'])} {f(a['precision'])} / {f(a.get('recall'))}"
            for a in weak if a["precision"] < relevance.FIDELITY_MIN["precision"]))
    return lines


@assignments_app.command("load", epilog=example(
    "dpspin assignments load --db tickets.duckdb --input scores.csv --replace"))
def assignments_load(db: Path = DB,
                     input: Path = typer.Option(..., "--input",
                                                help="CSV/JSON Lines/Parquet (or a folder of them) with record_id, "
                                                     "atom_id, weight (other names: --record-col, --atom-col, "
                                                     "--weight-col)."),
                     replace: bool = typer.Option(False, "--replace/--no-replace",
                                                  help="Replace the assignments already in the store."),
                     format: Optional[str] = typer.Option(None, "--format",
                                                          help="csv|jsonl|parquet (default: from the name)."),
                     delimiter: Optional[str] = typer.Option(None, "--delimiter",
                                                             help="CSV field delimiter (default ',')."),
                     record_col: str = typer.Option("record_id", "--record-col", help="Column with the record id."),
                     atom_col: str = typer.Option("atom_id", "--atom-col",
                                                  help="Column with the atom: its id, or its label in the store's "
                                                       "dictionary (a row whose label is not in it is dropped and "
                                                       "counted)."),
                     weight_col: str = typer.Option("weight", "--weight-col", help="Column with the weight.")) -> None:
    """Load your own classifier's assignments. Bounds are enforced later by the sketch, not trusted here."""
    from dpspin_sql.tabular import parse_delimiter

    sep = parse_delimiter(delimiter)
    con = store.connect(db)
    report = store.load_assignment_file(con, input, fmt=format, replace=replace, delimiter=sep,
                                        record_col=record_col, atom_col=atom_col, weight_col=weight_col)
    if report.replaced:
        out.print(f"replaced {report.replaced} assignment rows with {report.rows} from {input}", markup=False)
    else:
        out.print(f"loaded {report.rows} assignment rows", markup=False)
    for note in report.notes:
        out.print(note, markup=False)
