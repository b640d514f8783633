"""`dpspin compare`: what changed between two plans (or two segments of one), post-processing only.

    dpspin compare 2016.json 2017.json --out change.json
    dpspin compare periods.json --segment-a "before 2017-01-01" --segment-b "from 2017-01-01" --out change.json

Reads no store and charges nothing. Exit 1 when the plans cannot be compared (different
dictionaries or contribution bounds, the same release twice); 2 for bad input.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from dpspin_sql.cli.common import example, out

app = typer.Typer()


@app.command("compare", rich_help_panel="Read", epilog=example(
    "dpspin compare private_plan.json later.json --out change.json"))
def compare_cmd(
    plan_a: Path = typer.Argument(..., metavar="A.json", help="The plan compared from (a)."),
    plan_b: Optional[Path] = typer.Argument(None, metavar="[B.json]",
                                            help="The plan compared to (b); default: A again (two segments of it)."),
    out_path: Path = typer.Option(..., "--out", help="Where to write the comparison (JSON, docs/PLAN.md)."),
    segment: Optional[str] = typer.Option(None, "--segment", help="The segment to take from both segmented plans."),
    segment_a: Optional[str] = typer.Option(None, "--segment-a", help="A's segment (a segmented plan)."),
    segment_b: Optional[str] = typer.Option(None, "--segment-b", help="B's segment (a segmented plan)."),
    name_a: Optional[str] = typer.Option(None, "--name-a", help="A's name in the comparison (default: its segment, "
                                                                "else the file's name)."),
    name_b: Optional[str] = typer.Option(None, "--name-b", help="B's name."),
    confidence: float = typer.Option(0.95, "--confidence", help="Family-wise confidence of every interval."),
    comparisons: int = typer.Option(1, "--comparisons",
                                    help="How many comparisons you will look at (pairs of periods, products, …): "
                                         "each gets (1 − confidence)/N, so choosing the striking ones afterwards "
                                         "keeps the level."),
    equivalence: float = typer.Option(1.25, "--equivalence",
                                      help="'About the same': the ratio interval within [1/E, E]."),
    force: bool = typer.Option(False, "--force/--no-force", help="Replace an existing file at --out."),
    quiet: bool = typer.Option(False, "--quiet/--no-quiet", "-q", help="Print only the output path."),
) -> None:
    """Compare two plans over the same dictionary: per atom the difference b − a and the ratio with family-wise
    intervals, whether the change is supported, rank changes, and atoms admitted on one side only.

    dpspin compare periods.json --segment-a "before 2017-01-01" --segment-b "from 2017-01-01" --out change.json
    """
    import json

    from dpspin_sql.compare import ComparisonRequest, compare, read_side
    from dpspin_sql.errors import BadInput
    from dpspin_sql.outputs import Outputs, dictionary_sidecar, write_text_atomic

    if segment is not None and (segment_a is not None or segment_b is not None):
        raise BadInput("--segment names both sides' segment; with --segment-a / --segment-b name each")
    request = ComparisonRequest(confidence=confidence, comparisons=comparisons, equivalence=equivalence)
    a_path, b_path = plan_a, plan_b or plan_a
    outputs = Outputs(inputs=[a_path, dictionary_sidecar(a_path), b_path, dictionary_sidecar(b_path)], force=force)
    outputs.add(out_path, "--out")
    if out_path.exists():
        if not force:
            raise BadInput(f"--out {out_path} already exists; pass --force to replace it")
        if not _is_comparison(out_path):
            raise BadInput(f"--out {out_path} exists and is not a dpspin comparison; refusing to replace it")
    a = read_side(a_path, segment if segment is not None else segment_a, name=name_a)
    b = read_side(b_path, segment if segment is not None else segment_b, name=name_b)
    result = compare(a, b, request)
    write_text_atomic(out_path, json.dumps(result, indent=2, ensure_ascii=False))
    if quiet:
        out.print(str(out_path), markup=False)
        return
    from dpspin_sql.report import comparison_table

    out.print(comparison_table(result))
    out.print(f"comparison written to {out_path} (post-processing of the two plans: nothing charged)", markup=False)


def _is_comparison(path: Path) -> bool:
    import json

    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(d, dict) and d.get("kind") == "comparison"
