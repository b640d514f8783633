"""`dpspin release` and `dpspin budget`: spend budget on a plan; see and check what was spent."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from dpspin_sql import ledger, store
from dpspin_sql.cli.common import DB, budget_line, defaults_line, err, out
from dpspin_sql.errors import LedgerTampered

app = typer.Typer()


@app.command(rich_help_panel="Release")
def release(db: Path = DB,
            mechanism: str = typer.Option(..., help="laplace | gaussian | private_topL"),
            epsilon: float = typer.Option(..., help="ε of this release (> 0)."),
            delta: Optional[float] = typer.Option(None, help="δ for gaussian and private_topL (default 1e-6, "
                                                             "printed); laplace is pure ε-DP."),
            unit: str = typer.Option(..., help="record | user: the protected unit."),
            adjacency: str = typer.Option("add_drop", help="add_drop | replace."),
            B: Optional[float] = typer.Option(None, "-B", help="Per-user L1 contribution bound (user level; default 1)."),
            K: int = typer.Option(3, "-K", help="Atoms kept per record."),
            L: int = typer.Option(10, "-L", help="Atoms admitted to the plan."),
            selection_fraction: Optional[float] = typer.Option(None, help="Share of ε spent on admission "
                                                                          "(private_topL; default 0.5)."),
            calibration: Optional[str] = typer.Option(None, help="Gaussian calibration: zcdp (default, any ε) | "
                                                                 "classical (ε < 1)."),
            public_denominator: Optional[int] = typer.Option(None, help="Public count that turns masses into support."),
            comparison_margin: Optional[float] = typer.Option(None, help="Public margin for comparisons "
                                                                         "(default: from the noise)."),
            confidence: float = typer.Option(0.95, "--confidence", help="Confidence of the plan's accuracy intervals."),
            dataset: str = typer.Option(ledger.DEFAULT_DATASET, help="Budget to charge."),
            out_path: Path = typer.Option(..., "--out", help="Where to write the plan (private_plan.json)."),
            force: bool = typer.Option(False, "--force/--no-force", help="Replace an existing plan at --out."),
            quiet: bool = typer.Option(False, "--quiet/--no-quiet", "-q", help="Print only the plan path.")) -> None:
    """Release a DP plan: charge the ledger, then add OpenDP noise to the enforced sketch."""
    from dpspin_sql.outputs import Outputs
    from dpspin_sql.release import release as run_release
    from dpspin_sql.request import ReleaseRequest

    request = ReleaseRequest(mechanism=mechanism, epsilon=epsilon, delta=delta, unit=unit, adjacency=adjacency,
                             B=B, K=K, L=L, selection_fraction=selection_fraction, calibration=calibration,
                             public_denominator=public_denominator, comparison_margin=comparison_margin,
                             interval_confidence=confidence)
    con = store.connect(db)
    outputs = Outputs(store=db, force=force)
    plan = run_release(con, request, out=out_path, outputs=outputs, dataset=dataset)
    said = defaults_line(request)
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
