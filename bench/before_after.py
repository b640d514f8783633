"""Before/after tables from one grid directory whose datasets come in pairs (the same preset
under two settings), e.g. runs/renormalise (cfpb_supervised_raw → cfpb_supervised_renorm) or
runs/phrases_pos (amazon_pos_off → amazon_pos_on):

    python bench/before_after.py runs/renormalise cfpb_supervised_raw:cfpb_supervised_renorm ...

Cells: mean over seeds, before → after. Groups are matched on unit, sample size, K, L, B,
mechanism, ε, δ (m may differ: a different dictionary is part of what changed).
"""
from __future__ import annotations

import sys

from dpspin_sql.experiment.artifacts import load_runs
from dpspin_sql.experiment.report import group_runs

COLS = (("overlap@L", "overlap_at_L", 2), ("mass_retained", "mass_retained", 3), ("‖C‖₁", "sketch_mass", 0),
        ("truth overlap", "truth_overlap_at_L", 2), ("np truth overlap", "np_truth_overlap_at_L", 2))


def fmt(x, d):
    return "–" if x is None else (f"{x:,.0f}" if d == 0 else f"{x:.{d}f}")


def table(rows, before: str, after: str) -> str:
    key = lambda r: (r["unit"], r["n"], r["K"], r["L"], r["B"], r["mechanism"], r["epsilon"], r["delta"])  # noqa: E731
    a = {key(r): r for r in rows if r["dataset"] == before}
    b = {key(r): r for r in rows if r["dataset"] == after}
    cols = [c for c in COLS if any(r.get(f"{c[1]}_mean") is not None for r in list(a.values()) + list(b.values()))]
    out = [f"### {before} → {after}", "", "| unit | n | B | m | mechanism | ε | " + " | ".join(c[0] for c in cols) + " |",
           "|" + "---|" * (6 + len(cols))]
    for k in sorted(set(a) & set(b), key=lambda k: (k[0], k[1], k[4], ("laplace", "gaussian", "private_topL").index(k[5])
                                                    if k[5] in ("laplace", "gaussian", "private_topL") else 9, k[6])):
        ra, rb = a[k], b[k]
        m = f"{ra['m']}" if ra["m"] == rb["m"] else f"{ra['m']} → {rb['m']}"
        cells = [f"{fmt(ra.get(f'{c}_mean'), d)} → {fmt(rb.get(f'{c}_mean'), d)}" for _, c, d in cols]
        out.append(f"| {k[0]} | {k[1]} | {k[4]:g} | {m} | {k[5]} | {k[6]:g} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(run_dir: str, pairs: list[str]) -> None:
    rows = group_runs(load_runs(run_dir))
    for p in pairs:
        before, after = p.split(":")
        print(table(rows, before, after))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
