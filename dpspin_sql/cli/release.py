"""`dpspin release` and `dpspin budget`: spend budget on a plan; see and check what was spent."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from dpspin_sql import ledger, store
from dpspin_sql.cli.common import DB, budget_line, defaults_line, err, out
from dpspin_sql.errors import BadInput, LedgerTampered

app = typer.Typer()


@app.command(rich_help_panel="Release")
def release(db: Path = DB,
            mechanism: Optional[str] = typer.Option(None, help="laplace | gaussian | private_topL "
                                                               "(required, unless --from-sketch)."),
            epsilon: Optional[float] = typer.Option(None, help="ε of this release (> 0; required, unless "
                                                               "--from-sketch)."),
            delta: Optional[float] = typer.Option(None, help="δ for gaussian and private_topL (default 1e-6, "
                                                             "printed); laplace is pure ε-DP."),
            unit: Optional[str] = typer.Option(None, help="record | user: the protected unit (required, unless "
                                                          "--from-sketch)."),
            adjacency: Optional[str] = typer.Option(None, help="add_drop (default) | replace."),
            B: Optional[float] = typer.Option(None, "-B", help="Per-user L1 contribution bound (user level; default 1)."),
            K: Optional[int] = typer.Option(None, "-K", help="Atoms kept per record (default 3)."),
            L: Optional[int] = typer.Option(None, "-L", help="Atoms admitted to the plan (default 10)."),
            selection_fraction: Optional[float] = typer.Option(None, help="Share of ε spent on admission "
                                                                          "(private_topL; default 0.5)."),
            calibration: Optional[str] = typer.Option(None, help="Gaussian calibration: zcdp (default, any ε) | "
                                                                 "classical (ε < 1)."),
            public_denominator: Optional[int] = typer.Option(None, help="Public count that turns masses into support."),
            comparison_margin: Optional[float] = typer.Option(None, help="Public margin for comparisons "
                                                                         "(default: from the noise)."),
            confidence: Optional[float] = typer.Option(None, "--confidence",
                                                       help="Confidence of the plan's accuracy intervals (default 0.95)."),
            from_sketch: Optional[Path] = typer.Option(
                None, "--from-sketch", rich_help_panel="Two-phase warehouse release",
                help="The m-vector a warehouse computed with the query of `dpspin sql --emit-sketch` "
                     "(CSV with a header atom_id,mass; a JSON array; or JSON Lines). Checked, then released."),
            statement: Optional[Path] = typer.Option(
                None, "--statement", rich_help_panel="Two-phase warehouse release",
                help="The DP statement (.sql) whose emitted sketch the warehouse ran; the release's parameters "
                     "come from it (with --from-sketch)."),
            dialect: Optional[str] = typer.Option(
                None, "--dialect", rich_help_panel="Two-phase warehouse release",
                help="The warehouse that ran it: bigquery|snowflake|trino|postgres|spark|duckdb (recorded in the "
                     "ledger as warehouse:DIALECT)."),
            result_format: Optional[str] = typer.Option(
                None, "--format", rich_help_panel="Two-phase warehouse release",
                help="csv | json | jsonl (default: from the file name)."),
            max_units: Optional[int] = typer.Option(
                None, "--max-units", rich_help_panel="Two-phase warehouse release",
                help="Public upper bound on the protected units (records or users) in the warehouse: the "
                     "vector's total must fit it."),
            dataset: str = typer.Option(ledger.DEFAULT_DATASET, help="Budget to charge."),
            out_path: Path = typer.Option(..., "--out", help="Where to write the plan (private_plan.json)."),
            force: bool = typer.Option(False, "--force/--no-force", help="Replace an existing plan at --out."),
            quiet: bool = typer.Option(False, "--quiet/--no-quiet", "-q", help="Print only the plan path.")) -> None:
    """Release a DP plan: charge the ledger, then add OpenDP noise to the enforced sketch.

    With --from-sketch, the sketch is one a warehouse computed (two-phase release, docs/WAREHOUSE.md):
    dpspin release --from-sketch RESULT.csv --statement QUERY.sql --dialect bigquery --db STORE --out PLAN.json
    """
    from dpspin_sql.outputs import Outputs

    flags = {"--mechanism": mechanism, "--epsilon": epsilon, "--delta": delta, "--unit": unit,
             "--adjacency": adjacency, "-B": B, "-K": K, "-L": L, "--selection-fraction": selection_fraction,
             "--calibration": calibration, "--public-denominator": public_denominator,
             "--comparison-margin": comparison_margin, "--confidence": confidence}
    two_phase = {"--statement": statement, "--dialect": dialect, "--format": result_format,
                 "--max-units": max_units}
    if from_sketch is not None:
        given = [name for name, value in flags.items() if value is not None]
        if given:
            raise BadInput(f"with --from-sketch the release's parameters come from --statement; drop {given[0]}")
        if statement is None or dialect is None:
            raise BadInput("--from-sketch needs --statement QUERY.sql (the statement whose sketch was emitted) "
                           "and --dialect (the warehouse that ran it)")
        from dpspin_sql.cli.sql import read_statement
        from dpspin_sql.warehouse import release_from_sketch

        text = read_statement(statement)
        con = store.connect(db)
        outputs = Outputs(inputs=[from_sketch, statement], store=db, force=force)
        plan = release_from_sketch(con, text, from_sketch, dialect, out=out_path, fmt=result_format,
                                   max_units=max_units, dataset=dataset, outputs=outputs)
        _report(con, plan, None, out_path, dataset, quiet)
        return
    stray = [name for name, value in two_phase.items() if value is not None]
    if stray:
        raise BadInput(f"{stray[0]} goes with --from-sketch (a warehouse-computed sketch)")
    for name in ("--mechanism", "--epsilon", "--unit"):
        if flags[name] is None:
            raise BadInput(f"missing option {name} (or release a warehouse sketch with --from-sketch)")
    from dpspin_sql.release import release as run_release
    from dpspin_sql.request import ReleaseRequest

    chosen = {"adjacency": adjacency, "K": K, "L": L, "interval_confidence": confidence}
    request = ReleaseRequest(mechanism=mechanism, epsilon=epsilon, delta=delta, unit=unit, B=B,
                             selection_fraction=selection_fraction, calibration=calibration,
                             public_denominator=public_denominator, comparison_margin=comparison_margin,
                             **{k: v for k, v in chosen.items() if v is not None})
    con = store.connect(db)
    outputs = Outputs(store=db, force=force)
    plan = run_release(con, request, out=out_path, outputs=outputs, dataset=dataset)
    _report(con, plan, request, out_path, dataset, quiet)


def _report(con, plan, request, out_path: Path, dataset: str, quiet: bool) -> None:
    said = defaults_line(request) if request is not None else None
    if said:                      # privacy-relevant: said on stderr even with --quiet
        err.print(said, markup=False)
    if quiet:
        out.print(str(out_path))
        return
    from dpspin_sql.report import plan_table

    out.print(plan_table(plan))
    out.print(budget_line(con, dataset))
    out.print(f"plan written to {out_path}")


@app.command(rich_help_panel="Release")
def budget(db: Path = DB, dataset: str = typer.Option(ledger.DEFAULT_DATASET, help="Budget name."),
           as_json: bool = typer.Option(False, "--json/--no-json", help="Machine-readable output."),
           verify: bool = typer.Option(False, "--verify/--no-verify",
                                       help="Check the ledger: its hash chain, every stored OpenDP measurement's "
                                            "map and d_in; exit 1 naming the first bad row.")) -> None:
    """Show the total budget, what is spent and left, and every release charged."""
    con = store.connect(db, read_only=True)
    if verify:
        findings = ledger.verify(con)
        if as_json:
            print(json.dumps({"ok": not findings, "findings": [vars(f) for f in findings]}, indent=2))
        if findings:
            more = f" (and {len(findings) - 1} more: dpspin budget --verify --json)" if len(findings) > 1 else ""
            raise LedgerTampered(f"ledger check failed: {findings[0].line()}{more}")
        if as_json:
            return
        n = con.execute("SELECT count(*) FROM ledger").fetchall()[0][0]
        out.print(f"ledger verified: {n} row(s); the hash chain, every measurement's privacy map and d_in check")
        return
    st = ledger.status(con, dataset)
    if as_json:
        print(json.dumps(st.to_dict(), indent=2))
        return
    from dpspin_sql.report import budget_table

    out.print(budget_table(st))
