"""What a person at a terminal reads: the plan and budget tables (dpspin_sql/report.py) show
the released values and the ledger's spend as they are, and the experiment comparison table
(experiment/comparison.py) groups runs across seeds into mean ± std and states the charged cost."""
from __future__ import annotations

import math

import pytest
from rich.console import Console

from dpspin_sql import ledger
from dpspin_sql.experiment import comparison
from dpspin_sql.release import release
from dpspin_sql.report import budget_table, plan_table
from dpspin_sql.request import ReleaseRequest
from tests.helpers.core import synthetic_store


def rendered(table) -> str:
    console = Console(record=True, width=200)
    console.print(table)
    return console.export_text()


def test_the_plan_and_budget_tables_show_what_was_released_and_spent(tmp_path):
    con = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0, close=False)
    plan = release(con, ReleaseRequest(mechanism="laplace", epsilon=0.4, unit="user", B=2.0, L=4))
    text = rendered(plan_table(plan))
    assert "ε=0.4" in text and "user level (add_drop, B=2)" in text and "top 4 of m=12" in text
    for a in plan.atoms:
        line = next(ln for ln in text.splitlines() if f" {a.label} " in ln)
        assert f"{a.noisy_mass:.1f}" in line and f"{a.interval[0]:.1f} to {a.interval[1]:.1f}" in line
        assert a.bin in line
    assert f"noisy mass ± {plan.interval_half_width:.3g}" in text
    st = ledger.status(con)
    budget = rendered(budget_table(st))
    assert f"spent ε={st.epsilon_spent:.6g}" in budget and f"remaining ε={st.epsilon_remaining:.6g}" in budget
    assert plan.release_id in budget
    con.close()


def run(seed: int, method: str, eps: float, overlap: float, cost: float) -> dict:
    config = {"dataset": "cfpb", "unit": "record", "n_records": 1000, "K": 3, "L": 5, "B": 1.0, "method": method,
              "mechanism": "gaussian", "epsilon": eps, "delta": 1e-6, "seed": seed, "m": 40,
              "privacy_cost": {"epsilon": cost, "delta": 1e-6}}
    return {"config": config, "metrics": {"overlap_at_L": overlap, "mass_retained": 0.5}}


def test_the_comparison_groups_seeds_and_shows_the_charged_cost():
    runs = [run(0, "dpspin", 1.0, 0.6, 1.0), run(1, "dpspin", 1.0, 0.8, 1.0),
            run(0, "dpspin", 0.5, 0.4, 0.5), {"config": {"probe": True}, "metrics": None}]
    rows = comparison.group(runs)
    assert [(r["epsilon"], r["runs"]) for r in rows] == [(0.5, 1), (1.0, 2)]
    one = next(r for r in rows if r["epsilon"] == 1.0)
    assert one["overlap_at_L_mean"] == pytest.approx(0.7)
    assert one["overlap_at_L_std"] == pytest.approx(math.sqrt(0.02), rel=1e-9)     # sample std over the seeds
    text = comparison.markdown(rows)
    assert "0.70 ± 0.14" in text and "| 1 | " in text                             # charged ε 1, no rounding up
    only = comparison.markdown(rows, epsilons=[0.5])
    assert [ln.split(" | ")[0] for ln in only.splitlines() if ln.startswith("| 0") or ln.startswith("| 1")] == ["| 0.5"]
    assert comparison.to_csv(rows).splitlines()[0].startswith("dataset,unit,n,K,L,B,method,epsilon,delta,runs")
