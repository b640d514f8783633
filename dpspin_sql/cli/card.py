"""`dpspin card`: one self-contained HTML page about a release, for a reviewer or a reader.

    dpspin card PLAN.json --out card.html [--db STORE] [--summary SUMMARY.txt] [--attempts ATTEMPTS.json]

The plan is validated (against its dictionary sidecar when there is one) before anything
is written; the ledger is read-only; the summary is re-verified. Problems found (a ledger
that does not verify, a rejected summary, a plan not in the ledger) are shown on the
card and repeated on stderr; the card is still written (exit 0).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from dpspin_sql.cli.common import err, example, out

app = typer.Typer()


@app.command("card", rich_help_panel="Read", epilog=example(
    "dpspin card private_plan.json --db tickets.duckdb --summary summary.txt --out card.html"))
def card_cmd(
    plan: Path = typer.Argument(..., help="private_plan.json, or a comparison from dpspin compare"),
    out_path: Path = typer.Option(..., "--out", help="Where to write the card (an .html file)."),
    db: Optional[Path] = typer.Option(None, "--db", help="The store: adds the budget history and the ledger check."),
    summary: Optional[Path] = typer.Option(None, "--summary", help="The published summary (re-verified on the card)."),
    attempts: Optional[Path] = typer.Option(None, "--attempts",
                                            help="verifier_attempts.json (default: the one beside --summary, "
                                                 "if there is one)."),
    dictionary: Optional[Path] = typer.Option(None, "--dictionary",
                                              help="Public dictionary (default: the sidecar beside the plan)."),
    segment: Optional[str] = typer.Option(None, "--segment", help="A segmented plan's card shows this segment."),
    force: bool = typer.Option(False, "--force/--no-force", help="Replace an existing file at --out."),
) -> None:
    """Write a release card: the plan, a chart of its masses and intervals, the mechanism, the ledger history and
    the summary's verdict, as one HTML page (no network, printable)."""
    from dpspin_sql.card import gather, write_card
    from dpspin_sql.errors import BadInput
    from dpspin_sql.outputs import Outputs, dictionary_sidecar

    if attempts is None and summary is not None:
        beside = summary.parent / "verifier_attempts.json"
        attempts = beside if beside.is_file() else None
    outputs = Outputs(inputs=[plan, dictionary_sidecar(plan), summary, attempts, dictionary], store=db)
    outputs.add(out_path, "--out")
    if out_path.exists() and not force:
        raise BadInput(f"--out {out_path} already exists; pass --force to replace it")
    from dpspin_sql.plan import read_json

    body = read_json(plan, "plan")
    if isinstance(body, dict) and body.get("kind") == "comparison":   # `dpspin compare`'s output
        given = [name for name, v in (("--db", db), ("--summary", summary), ("--attempts", attempts),
                                      ("--dictionary", dictionary), ("--segment", segment)) if v is not None]
        if given:
            raise BadInput(f"{given[0]} applies to a plan's card; a comparison's card is made from the comparison alone")
        from dpspin_sql.card_comparison import write_comparison_card

        write_comparison_card(body, out_path, str(plan))
        out.print(f"comparison card written to {out_path}", markup=False)
        return
    data = gather(plan, db=db, summary=summary, attempts=attempts, dictionary=dictionary, segment=segment)
    write_card(data, out_path)
    for note in data.notes:
        err.print(f"note: {note}", markup=False)
    out.print(f"release card written to {out_path}", markup=False)
