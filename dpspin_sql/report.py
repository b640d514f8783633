"""Rich tables for people at a terminal: a plan and a budget. Presentation only."""
from __future__ import annotations

from rich.table import Table

from dpspin_sql.ledger import BudgetStatus
from dpspin_sql.plan import Plan


def plan_table(plan: Plan) -> Table:
    eps = plan.privacy_cost.get("epsilon", plan.epsilon)
    title = (f"DP plan · {plan.mechanism} · ε={eps:.4g}" + (f", δ={plan.delta:.2g}" if plan.delta else "")
             + f" · {plan.unit} level ({plan.adjacency}" + (f", B={plan.B:g}" if plan.unit == "user" else "")
             + f") · top {plan.L} of m={plan.m}")
    table = Table(title=title, caption=f"noise scale {plan.noise_scale:.3g} · comparison margin "
                                       f"{plan.comparison_margin:.3g} · dictionary {plan.dictionary[:19]}…")
    table.add_column("rank", justify="right")
    table.add_column("atom")
    table.add_column("noisy mass", justify="right")
    if plan.public_denominator:
        table.add_column("support", justify="right")
    table.add_column("bin")
    for a in plan.atoms:
        row = [str(a.rank), a.label, f"{a.noisy_mass:.1f}"]
        if plan.public_denominator:
            row.append(f"{a.support:.1%}")
        row.append(a.bin)
        table.add_row(*row)
    return table


def budget_table(st: BudgetStatus) -> Table:
    table = Table(title=f"budget · dataset {st.dataset!r} · total ε={st.epsilon_total:g}, δ={st.delta_total:g}",
                  caption=f"spent ε={st.epsilon_spent:.6g}, δ={st.delta_spent:.3g} · "
                          f"remaining ε={st.epsilon_remaining:.6g}, δ={st.delta_remaining:.3g}")
    for col in ("release", "when (UTC)", "mechanism", "ε", "δ", "unit", "L", "plan"):
        table.add_column(col)
    for r in st.releases:
        p = r["params"]
        table.add_row(r["release_id"], r["created_at"], r["mechanism"], f"{r['epsilon']:.6g}", f"{r['delta']:.3g}",
                      str(p.get("unit", "")), str(p.get("L", "")), str(r["plan_path"] or ""))
    return table
