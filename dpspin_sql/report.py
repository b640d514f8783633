"""Rich tables for people at a terminal: a plan and a budget. Presentation only.

The plan table says what its columns mean (docs/PLAN.md): the noisy mass with its
accuracy interval, the bin rule (rank cut-offs or support thresholds, not counts), and
the comparison margin.
"""
from __future__ import annotations

from rich.table import Table

from dpspin_sql.ledger import BudgetStatus
from dpspin_sql.plan import Plan, bin_rule


def _conf(plan: Plan) -> str:
    return f"{plan.interval_confidence * 100:g}%" if plan.interval_confidence else ""


def plan_table(plan: Plan) -> Table:
    eps = plan.privacy_cost.get("epsilon", plan.epsilon)
    title = (f"DP plan · {plan.mechanism} · ε={eps:.4g}" + (f", δ={plan.delta:.2g}" if plan.delta else "")
             + f" · {plan.unit} level ({plan.adjacency}" + (f", B={plan.B:g}" if plan.unit == "user" else "")
             + f") · top {plan.L} of m={plan.m}")
    rows = plan.all_atoms()
    segmented = plan.segments is not None
    if segmented:
        seg = plan.segmentation or {}
        admission = "per segment" if seg.get("admission") == "per_segment" else "over all segments"
        title += f" · {len(plan.segments or [])} segments by {seg.get('name')} (top {plan.L} {admission})"
    has_interval = any(a.interval for _, a in rows)
    per_user = f", each user at most B={plan.B:g} in all" if plan.unit == "user" else ""
    caption = [f"mass: the atom's total weight (each record gives at most 1, split over ≤ K={plan.K} atoms"
               f"{per_user}), plus noise"]
    if plan.mass_unit:
        caption.append(f"unit of mass: {plan.mass_unit}")
    fid = (plan.assignment or {}).get("fidelity")
    if fid and fid.get("precision") is not None:
        caption.append(f"assignment fidelity on held-out auxiliary records: precision {fid['precision']:.2f}, "
                       f"recall {fid['recall']:.2f} ({plan.assignment.get('scorer')} scorer)")
    elif plan.assignment:
        caption.append(f"assignment fidelity: not measured ({plan.assignment.get('scorer')} assignments)")
    if has_interval:
        caption.append(f"interval: noisy mass ± {plan.interval_half_width:.3g}; the {len(rows)} intervals "
                       f"hold together with {_conf(plan)} confidence")
    caption.append("bin: " + (plan.bin_rule or bin_rule(plan.bins, plan.bin_basis)))
    caption.append(f"'a more common than b' needs a gap ≥ {plan.comparison_margin:.3g} (comparison margin)")
    caption.append(f"noise scale {plan.noise_scale:.3g} · dictionary {plan.dictionary[:19]}…")
    if segmented:
        caption.append("rank: within the segment; a record is in at most one segment, and at user level a user's "
                       f"records in all segments give at most B={plan.B:g} together")
    table = Table(title=title, caption="\n".join(caption), caption_justify="left")
    if segmented:
        table.add_column("segment")
    table.add_column("rank", justify="right")
    table.add_column("atom")
    table.add_column("noisy mass", justify="right")
    if has_interval:
        table.add_column(f"{_conf(plan)} interval", justify="right")
    if plan.public_denominator:
        table.add_column("support", justify="right")
    table.add_column("bin")
    for segment, a in rows:
        row = ([segment] if segmented else []) + [str(a.rank), a.label, f"{a.noisy_mass:.1f}"]
        if has_interval:
            row.append(f"{a.interval[0]:.1f} to {a.interval[1]:.1f}" if a.interval else "")
        if plan.public_denominator:
            row.append(f"{a.support:.1%}")
        row.append(a.bin)
        table.add_row(*row)
    return table


def comparison_table(c: dict) -> Table:
    """A comparison (dpspin_sql.compare) at a terminal: per atom both sides, b − a with its
    interval, the ratio, and what is supported."""
    a, b = c["a"], c["b"]
    conf = f"{c['confidence'] * 100:g}%"
    title = f"comparison · {a['name']} → {b['name']} · difference b − a · {conf} family-wise over {c['family']['size']}"
    table = Table(title=title, caption_justify="left", caption="\n".join([
        f"a: {a['mechanism']} (noise scale {a['noise_scale']:.3g}); b: {b['mechanism']} (noise scale "
        f"{b['noise_scale']:.3g}); every interval holds together with {conf} confidence",
        "rose/fell: the difference interval excludes 0; 'no supported change' is not evidence of no change",
        "only in a / only in b: admitted to one plan's top L only; not a zero in the other"]))
    for col, justify in (("atom", "left"), (f"{a['name']}", "right"), (f"{b['name']}", "right"),
                         ("b − a", "right"), (f"{conf} interval", "right"), ("ratio", "right"), ("change", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]

    def fmt(v) -> str:
        return "–" if v is None else f"{v:.1f}"

    for r in c["atoms"]:
        lo, hi = r["difference_interval"]
        ratio = "–" if r["ratio"] is None else f"{r['ratio']:.2f}"
        change = r["change"].replace("_", " ") + (" (about the same)" if r.get("about_the_same") else "")
        table.add_row(r["label"], f"{r['a']['noisy_mass']:.1f} (#{r['a']['rank']})",
                      f"{r['b']['noisy_mass']:.1f} (#{r['b']['rank']})", f"{r['difference']:+.1f}",
                      f"{lo:.1f} to {hi:.1f}", ratio, change)
    for key, side in (("only_in_a", "a"), ("only_in_b", "b")):
        for r in c[key]:
            lo, hi = r["difference_interval"]
            here = r[side]
            cells = [f"{here['noisy_mass']:.1f} (#{here['rank']})", "not admitted"]
            if side == "b":
                cells.reverse()
            table.add_row(r["label"], *cells, "", f"{fmt(lo)} to {fmt(hi)}", "",
                          r["change"].replace("_", " ") + f" (only in {side})")
    return table


def budget_table(st: BudgetStatus) -> Table:
    comp = st.composition
    zcdp = comp is not None and comp.accountant == "zcdp"
    caption = [f"spent ε={st.epsilon_spent:.6g}, δ={st.delta_spent:.3g} · "
               f"remaining ε={st.epsilon_remaining:.6g}, δ={st.delta_remaining:.3g}"]
    if comp is not None:
        caption.append(comp.summary())
    if zcdp and comp is not None:
        caption.append(f"zcdp admits a release while basic composition fits in (ε={st.epsilon_total:g}, "
                       f"δ={comp.basic_delta_limit:g}) or the composed ρ stays within {comp.rho_limit:.6g} "
                       f"(ε={st.epsilon_total:g} at δ={comp.zcdp_delta:g}); together (ε={st.epsilon_total:g}, "
                       f"δ={st.delta_total:g}): docs/DESIGN.md §4")
    table = Table(title=f"budget · dataset {st.dataset!r} · total ε={st.epsilon_total:g}, δ={st.delta_total:g} · "
                        f"accountant {st.accountant}",
                  caption="\n".join(caption), caption_justify="left")
    for col in ("release", "when (UTC)", "mechanism", "ε", "δ", *(("ρ",) if zcdp else ()), "unit", "L", "plan"):
        table.add_column(col)
    for r in st.releases:
        p = r["params"]
        rho = [f"{r['rho']:.4g}" if r.get("rho") is not None else "–"] if zcdp else []
        table.add_row(r["release_id"], r["created_at"], r["mechanism"], f"{r['epsilon']:.6g}", f"{r['delta']:.3g}",
                      *rho, str(p.get("unit", "")), str(p.get("L", "")), str(r["plan_path"] or ""))
    return table
