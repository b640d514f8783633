"""The release card: one self-contained HTML page about one release (`dpspin card`).

For a privacy reviewer and a first-time reader alike: the plan as a table and a bar
chart of its noisy masses with their accuracy intervals, the mechanism and its public
parameters, the budget history from the ledger (with the ledger's own check), the
published summary with a fresh verifier verdict and how it was produced.

The page has no script and loads nothing: CSS and the SVG chart are inline and a
Content-Security-Policy forbids every fetch, so it opens offline, mails as one file and
prints (`@media print`). Every string from a plan, a ledger, a summary or an attempts
file is escaped — labels are public but not trusted to be plain text.

Everything shown is public: the plan, the public dictionary, the ledger's public rows
and the summary. Reading them costs no budget.
"""
from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpspin_sql import mechanism_kinds
from dpspin_sql.chart_labels import chart_lines

__all__ = ["CardData", "gather", "render", "write_card"]

MECHANISM_WORDS = {k.name: k.card for k in mechanism_kinds.KINDS.values()}
BIN_COLORS = {"high": "#2f6fa8", "moderate": "#6ea6d8", "low": "#bcd5ec"}


# ------------------------------------------------------------------ gathering

@dataclass
class CardData:
    """Everything the card shows; `render` turns it into HTML without any I/O."""

    plan: dict
    plan_path: str
    dictionary_note: str
    budget: Any = None                       # ledger.BudgetStatus
    ledger_findings: list | None = None      # ledger.Finding; None when no store was read
    store_path: str | None = None
    store_gone: bool = False                 # the store was temporary and no longer exists (the demo's)
    summary_path: str | None = None
    summary_text: str | None = None
    verdict: Any = None                      # verify.Verdict
    attempts: dict | None = None
    attempts_path: str | None = None
    notes: list[str] = field(default_factory=list)   # problems worth a warning line
    generated_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


def gather(plan_path: str | Path, *, db: str | Path | None = None, summary: str | Path | None = None,
           attempts: str | Path | None = None, dictionary: str | Path | None = None,
           segment: str | None = None) -> CardData:
    """Read and check a release's public pieces: the plan (validated against its
    dictionary), the store's ledger (read-only, `ledger.verify`), the summary (re-verified)
    and the attempts file. A segmented plan's card shows one `segment` (plan.segment_part)."""
    from dpspin_sql.errors import BadInput
    from dpspin_sql.outputs import dictionary_sidecar
    from dpspin_sql.plan import read_json, segment_part, validate_plan

    plan_path = Path(plan_path)
    plan = read_json(plan_path, "plan")
    if isinstance(plan, dict) and isinstance(plan.get("segments"), list):
        validate_plan(plan)
        if segment is None:
            known = ", ".join(repr(x) for x in (plan.get("segmentation") or {}).get("labels") or [])
            raise BadInput(f"{plan_path} is a segmented plan: card one segment with --segment ({known})")
        plan = segment_part(plan, segment)
    elif segment is not None:
        raise BadInput(f"{plan_path} is not a segmented plan: it has no segment {segment!r}")
    dict_path = Path(dictionary) if dictionary else dictionary_sidecar(plan_path)
    labels = None
    if dict_path.is_file():
        body = read_json(dict_path, "dictionary")
        validate_plan(plan, body if isinstance(body, dict) else None)
        if isinstance(body, dict):
            labels = body["atoms"]
            note = f"{dict_path.name}: {len(labels)} atoms; its content hashes to the plan's dictionary"
        else:
            labels = body if isinstance(body, list) else None
            note = f"{dict_path.name}: a label list (no hash to check)"
    else:
        if dictionary:
            raise BadInput(f"dictionary file not found: {dict_path}")
        validate_plan(plan)
        note = (f"no public dictionary beside the plan ({dict_path.name}): mentions of non-admitted atoms "
                "could not be checked")
    data = CardData(plan=plan, plan_path=str(plan_path), dictionary_note=note)
    if labels is None:
        data.notes.append("no public dictionary: the verifier could not look for non-admitted atoms")
    if db is not None:
        _read_ledger(data, Path(db))
    if summary is not None:
        summary = Path(summary)
        if not summary.is_file():
            raise BadInput(f"summary file not found: {summary}")
        try:
            data.summary_text = summary.read_text(encoding="utf-8").rstrip("\n")
        except (OSError, UnicodeDecodeError):
            raise BadInput(f"cannot read summary {summary} as UTF-8 text") from None
        data.summary_path = str(summary)
        from dpspin_sql.verify import verify

        data.verdict = verify(data.summary_text, plan, dictionary=labels)
        if not data.verdict.accepted:
            data.notes.append(f"the summary is rejected by the verifier ({len(data.verdict.violations)} violation(s))")
    if attempts is not None:
        attempts = Path(attempts)
        body = read_json(attempts, "attempts")
        if not isinstance(body, dict) or not isinstance(body.get("attempts"), list):
            raise BadInput(f"{attempts} is not a verifier_attempts.json (it needs an 'attempts' list)")
        data.attempts, data.attempts_path = body, str(attempts)
        final = body.get("final_text")
        if data.summary_text is not None and isinstance(final, str) and final.strip() != data.summary_text.strip():
            data.notes.append("the attempts file's final text is not this summary")
    return data


def _read_ledger(data: CardData, db: Path) -> None:
    import duckdb

    from dpspin_sql import ledger, store
    from dpspin_sql.ledger import Finding

    con = store.connect(db, read_only=True)
    data.store_path = str(db)
    try:
        release_id = data.plan.get("release_id")
        datasets = [r[0] for r in con.execute("SELECT dataset FROM budget ORDER BY dataset").fetchall()]
        statuses = [ledger.status(con, d) for d in datasets]
        mine = [s for s in statuses if any(r["release_id"] == release_id for r in s.releases)]
        chosen = mine[0] if mine else next((s for s in statuses if s.dataset == ledger.DEFAULT_DATASET),
                                           statuses[0] if statuses else None)
        data.budget = chosen
        data.ledger_findings = ledger.verify(con)
    except duckdb.Error as exc:   # an old or damaged store: say so on the card rather than fail
        data.ledger_findings = [Finding(None, None, f"the ledger could not be read ({type(exc).__name__})")]
    finally:
        con.close()
    if data.ledger_findings:
        data.notes.append(f"the ledger does not verify: {data.ledger_findings[0].line()}")
    row = _this_row(data)
    if not data.plan.get("release_id"):
        data.notes.append("the plan names no release id, so its ledger row cannot be found")
    elif row is None:
        data.notes.append(f"release {data.plan.get('release_id')} is not in this store's ledger")
    elif data.plan.get("ledger_chain") and row.get("chain") != data.plan.get("ledger_chain"):
        data.notes.append("the plan's ledger_chain is not the chain hash of its ledger row")


def _this_row(data: CardData) -> dict | None:
    if data.budget is None:
        return None
    return next((r for r in data.budget.releases if r["release_id"] == data.plan.get("release_id")), None)


# ------------------------------------------------------------------ HTML helpers

def e(value: Any) -> str:
    """Escape anything for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def _num(x: Any, digits: int = 1) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return "–"
    return f"{x + 0.0:.{digits}f}"


def _g(x: Any, digits: int = 4) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return "–" if x is None else e(x)
    return f"{x:.{digits}g}"


def _pct(x: Any) -> str:
    return "–" if not isinstance(x, (int, float)) or isinstance(x, bool) else f"{x * 100:.1f}%"


def _store_name(data: CardData) -> str:
    """The store the ledger was read from, or that it was a temporary one now deleted."""
    if data.store_gone:
        return ("read from a temporary store that was deleted when the command ended "
                "(<code>dpspin demo --db FILE</code> keeps it)")
    return f"store {_file(data.store_path)}"


def label_text(lines: list[str], x: float, mid: float, prefix: str = "") -> str:
    """An SVG text of one or two lines (chart_labels.chart_lines), right-aligned at `x`, centred on `mid`."""
    if len(lines) == 1:
        return f'<text class="label" x="{x}" y="{mid + 4:.1f}" text-anchor="end">{e(prefix + lines[0])}</text>'
    first = f'<tspan x="{x}" y="{mid - 3:.1f}">{e(prefix + lines[0])}</tspan>'
    rest = "".join(f'<tspan x="{x}" dy="15"> {e(line)}</tspan>' for line in lines[1:])
    return f'<text class="label" text-anchor="end">{first}{rest}</text>'


def _file(path: str | None) -> str:
    """A file the card was made from: its name, the path as given in the tooltip."""
    if not path:
        return ""
    return f'<code title="{e(path)}">{e(Path(path).name)}</code>'


def _confidence(plan: dict) -> float | None:
    c = plan.get("interval_confidence")
    return float(c) if isinstance(c, (int, float)) and not isinstance(c, bool) and 0 < c < 1 else None


def _badge(ok: bool | None, text: str) -> str:
    cls = "ok" if ok else "warn" if ok is None else "bad"
    mark = "✓" if ok else "–" if ok is None else "✗"
    return f'<span class="badge {cls}">{mark} {e(text)}</span>'


def _rows(pairs: list[tuple[str, str]]) -> str:
    """<tr><th>key</th><td>value</td></tr> rows; the value is already HTML."""
    return "".join(f"<tr><th scope=\"row\">{e(k)}</th><td>{v}</td></tr>" for k, v in pairs)


# ------------------------------------------------------------------ chart

def _nice_step(span: float, target: int = 6) -> float:
    raw = span / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    for f in (1, 2, 2.5, 5, 10):
        if f * mag >= raw:
            return f * mag
    return 10 * mag


def chart_svg(plan: dict) -> str:
    """Horizontal bars of the noisy masses (by rank) with their intervals as error bars."""
    atoms = plan["atoms"]
    if not atoms:
        return '<p class="muted">The plan admits no atoms: nothing to draw.</p>'
    lows = [a["interval"][0] if a.get("interval") else a["noisy_mass"] for a in atoms]
    highs = [a["interval"][1] if a.get("interval") else a["noisy_mass"] for a in atoms]
    lo, hi = min(0.0, *lows, *(a["noisy_mass"] for a in atoms)), max(0.0, *highs, *(a["noisy_mass"] for a in atoms))
    if hi - lo <= 0:
        hi = lo + 1.0
    step = _nice_step(hi - lo)
    lo, hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
    names = [a["label"] for a in atoms]
    shown = [chart_lines(name, names) for name in names]
    label_w, plot_w, right = 240, 780, 40
    row_h, top, bottom = (38 if any(len(s) > 1 for s in shown) else 30), 16, 64
    width = label_w + plot_w + right
    height = top + row_h * len(atoms) + bottom

    def x(v: float) -> float:
        return label_w + (v - lo) / (hi - lo) * plot_w

    conf = _confidence(plan)
    parts = [f'<svg id="mass-chart" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" aria-labelledby="chart-title chart-desc">',
             f'<title id="chart-title">Noisy masses of the {len(atoms)} admitted atoms</title>',
             '<desc id="chart-desc">One bar per atom in rank order; the black line is its accuracy interval.</desc>']
    # grid and ticks
    ticks, t = [], lo
    while t <= hi + step / 1000:
        ticks.append(round(t, 10))
        t += step
    axis_y = top + row_h * len(atoms)
    for t in ticks:
        cls = "zero" if t == 0 else "grid"
        parts.append(f'<line class="{cls}" x1="{x(t):.1f}" y1="{top - 4}" x2="{x(t):.1f}" y2="{axis_y}"/>')
        parts.append(f'<text class="tick" x="{x(t):.1f}" y="{axis_y + 16}" text-anchor="middle">{t:g}</text>')
    for i, a in enumerate(atoms):
        y = top + i * row_h
        mid = y + row_h / 2
        v = float(a["noisy_mass"])
        x0, x1 = sorted((x(0.0), x(v)))
        color = BIN_COLORS.get(a.get("bin"), "#999")
        tip = f'{a["label"]}: noisy mass {_num(v)}'
        if a.get("interval"):
            tip += f', interval {_num(a["interval"][0])} to {_num(a["interval"][1])}'
        tip += f', bin {a.get("bin")}'
        parts.append(f'<g class="atom" data-rank="{int(a["rank"])}"><title>{e(tip)}</title>')
        parts.append(label_text(shown[i], label_w - 8, mid, prefix=f'{int(a["rank"])}. '))
        parts.append(f'<rect class="bar" x="{x0:.1f}" y="{y + 6}" width="{max(x1 - x0, 0.5):.1f}" '
                     f'height="{row_h - 12}" fill="{color}"/>')
        if a.get("interval"):
            il, ih = x(a["interval"][0]), x(a["interval"][1])
            whisker = (f'<line x1="{il:.1f}" y1="{mid}" x2="{ih:.1f}" y2="{mid}"/>'
                       f'<line x1="{il:.1f}" y1="{mid - 6}" x2="{il:.1f}" y2="{mid + 6}"/>'
                       f'<line x1="{ih:.1f}" y1="{mid - 6}" x2="{ih:.1f}" y2="{mid + 6}"/>')
            parts.append(f'<g class="errorbar">{whisker}</g>')
        parts.append("</g>")
    axis_label = "noisy mass (units of mass)"
    if conf:
        axis_label += f"; black lines: {conf * 100:g}% intervals, all holding together"
    parts.append(f'<text class="axis" x="{label_w + plot_w / 2:.0f}" y="{axis_y + 36}" text-anchor="middle">'
                 f'{e(axis_label)}</text>')
    # legend: bins and the comparison margin to scale
    lx, ly = label_w, axis_y + 50
    for name in ("high", "moderate", "low"):
        parts.append(f'<rect class="legend" x="{lx}" y="{ly}" width="12" height="10" fill="{BIN_COLORS[name]}"/>'
                     f'<text class="tick" x="{lx + 16}" y="{ly + 9}">{name}</text>')
        lx += 90
    margin = plan.get("comparison_margin")
    if isinstance(margin, (int, float)) and 0 < margin < (hi - lo):
        w = margin / (hi - lo) * plot_w
        parts.append(f'<g class="margin"><line x1="{lx}" y1="{ly + 5}" x2="{lx + w:.1f}" y2="{ly + 5}"/>'
                     f'<line x1="{lx}" y1="{ly}" x2="{lx}" y2="{ly + 10}"/>'
                     f'<line x1="{lx + w:.1f}" y1="{ly}" x2="{lx + w:.1f}" y2="{ly + 10}"/></g>'
                     f'<text class="tick" x="{lx + w + 6:.1f}" y="{ly + 9}">comparison margin ({_g(margin, 3)})</text>')
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------ sections

def _plan_table(plan: dict) -> str:
    atoms = plan["atoms"]
    support = any(a.get("support") is not None for a in atoms)
    measure = any(a.get("measure") for a in atoms)
    fidelity = any(isinstance(a.get("fidelity"), dict) for a in atoms)
    conf = _confidence(plan)
    head = ["rank", "label", "description", "noisy mass", f"{conf * 100:g}% interval" if conf else "interval"]
    if support:
        head += ["support", "support interval"]
    if measure:
        head.append("the mass measures")
    if fidelity:
        head += ["precision (aux)", "recall (aux)"]
    head.append("bin")
    rows = []
    for a in atoms:
        iv = a.get("interval")
        cells = [f'<td class="num">{int(a["rank"])}</td>', f'<td class="label">{e(a["label"])}</td>',
                 f'<td class="desc">{e(a.get("description", ""))}</td>',
                 f'<td class="num">{_num(a["noisy_mass"])}</td>',
                 f'<td class="num">{_num(iv[0])} – {_num(iv[1])}</td>' if iv else '<td class="num">–</td>']
        if support:
            si = a.get("support_interval")
            cells += [f'<td class="num">{_pct(a.get("support"))}</td>',
                      f'<td class="num">{_pct(si[0])} – {_pct(si[1])}</td>' if si else '<td class="num">–</td>']
        if measure:
            cells.append(f'<td class="desc">{e(a.get("measure") or "")}</td>')
        if fidelity:
            fid = a.get("fidelity") if isinstance(a.get("fidelity"), dict) else {}
            cells += [f'<td class="num">{_g(fid.get("precision"), 2) if fid.get("precision") is not None else "–"}</td>',
                      f'<td class="num">{_g(fid.get("recall"), 2) if fid.get("recall") is not None else "–"}</td>']
        cells.append(f'<td><span class="bin bin-{e(a.get("bin"))}">{e(a.get("bin"))}</span></td>')
        rows.append(f'<tr data-atom-id="{e(a.get("atom_id"))}">' + "".join(cells) + "</tr>")
    ths = "".join(f'<th scope="col">{e(h)}</th>' for h in head)
    return (f'<table id="plan-table"><thead><tr>{ths}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _reading_guide(plan: dict) -> str:
    notes = plan.get("notes") or {}
    items = []
    for key, title in (("noisy_mass", "Mass"), ("interval", "Interval"), ("bins", "Bin"),
                       ("comparison_margin", "Comparison")):
        if isinstance(notes.get(key), str):
            items.append(f"<dt>{title}</dt><dd>{e(notes[key])}</dd>")
    if plan.get("bin_rule"):
        items.append(f"<dt>Bin rule</dt><dd>{e(plan['bin_rule'])}</dd>")
    if isinstance(plan.get("mass_unit"), str):
        items.insert(0, f"<dt>Unit of mass</dt><dd>{e(plan['mass_unit'])}</dd>")
    assignment = plan.get("assignment") if isinstance(plan.get("assignment"), dict) else {}
    if assignment:
        items.insert(1, f"<dt>Assignment</dt><dd>{_assignment_text(assignment)}</dd>")
    if not items:
        items.append("<dt>Mass</dt><dd>The released total weight of each atom plus noise (docs/PLAN.md).</dd>")
    return f'<dl class="guide">{"".join(items)}</dl>'


def _assignment_text(a: dict) -> str:
    """The scorer, what expressing an atom means, and its fidelity against the documented minimum."""
    parts = [f"{e(a.get('scorer'))} scorer" + ("" if a.get("calibrated") else " (uncalibrated)")]
    if a.get("definition"):
        parts.append(f"an atom is expressed when {e(a['definition'])}")
    fid = a.get("fidelity") if isinstance(a.get("fidelity"), dict) else None
    floor: dict = a["fidelity_minimum"] if isinstance(a.get("fidelity_minimum"), dict) else {}
    if fid and fid.get("precision") is not None:
        ok = all(isinstance(fid.get(k), (int, float)) and fid[k] >= v for k, v in floor.items())
        parts.append(f"fidelity on {e(fid.get('records'))} held-out auxiliary records: precision "
                     f"{_g(fid.get('precision'), 2)} (share of an atom's mass from records that express it), recall "
                     f"{_g(fid.get('recall'), 2)} (share of those records given mass); "
                     + ("meets" if ok else "<strong>below</strong>") + " the documented minimum ("
                     + ", ".join(f"{e(k)} ≥ {_g(v, 2)}" for k, v in floor.items()) + ")")
    else:
        parts.append("<strong>fidelity not measured</strong>: a mass need not come from records that express its atom")
    return "; ".join(parts)


def _parameters(plan: dict, dictionary_note: str) -> str:
    cost = plan.get("privacy_cost") or {}
    details = plan.get("mechanism_details") or {}
    mech = plan.get("mechanism")
    noise = details.get("noise") or ("laplace" if mech == "laplace" else "gaussian")
    pairs = [
        ("mechanism", f"<strong>{e(mech)}</strong> — {e(MECHANISM_WORDS.get(str(mech), ''))}"),
        ("privacy cost charged", f"ε = {_g(cost.get('epsilon', plan.get('epsilon')), 6)}, "
                                 f"δ = {_g(cost.get('delta', plan.get('delta')), 3)}"),
        ("requested", f"ε = {_g(plan.get('epsilon'), 6)}, δ = {_g(plan.get('delta'), 3)}"),
        ("protected unit", f"{e(plan.get('unit'))} (adjacency {e(plan.get('adjacency'))})"),
        ("B (per-user L1 bound)", _g(plan.get("B"))),
        ("K (atoms per record)", _g(plan.get("K"))),
        ("L (atoms admitted) of m", f"{_g(plan.get('L'))} of {_g(plan.get('m'))}"),
        ("calibration", e(plan.get("calibration"))),
        ("noise scale", f"{_g(plan.get('noise_scale'))} ({'σ' if noise == 'gaussian' else 'b'} of the {e(noise)} "
                        "noise on each released mass, in units of mass)"),
        ("comparison margin", f"{_g(plan.get('comparison_margin'))} (a gap this large is a supported comparison"
                              + (f" at confidence {_g(details['comparison_confidence'])}"
                                 if details.get("comparison_confidence") else "") + ")"),
    ]
    if plan.get("interval_half_width") is not None:
        family = plan.get("L") if mechanism_kinds.selects_privately(mech) else plan.get("m")
        pairs.append(("accuracy intervals", f"noisy mass ± {_g(plan['interval_half_width'])}, "
                                            f"{_g((_confidence(plan) or 0) * 100)}% family-wise "
                                            f"(Bonferroni over {_g(family)})"))
    if mechanism_kinds.selects_privately(mech):
        pairs.append(("selection", f"fraction {_g(details.get('selection_fraction'))} of ε: "
                                   f"ε_sel = {_g(details.get('selection_epsilon'))}, "
                                   f"ε_val = {_g(details.get('value_epsilon'))}"
                                   + (", monotone" if details.get("monotonic") else "")))
    pairs += [
        ("public denominator", _g(plan.get("public_denominator")) if plan.get("public_denominator") else "none"),
        ("bins", f"{e(json.dumps(plan.get('bins'), ensure_ascii=False))} on {e(plan.get('bin_basis'))}"),
        ("noise source", e(plan.get("noise_source", "–"))),
        ("dictionary", f'<code class="hash">{e(plan.get("dictionary"))}</code><br><span class="muted">'
                       f'{e(dictionary_note)}</span>'),
        ("release id", f'<code>{e(plan.get("release_id"))}</code>'),
        ("ledger chain", f'<code class="hash">{e(plan.get("ledger_chain"))}</code>'),
        ("schema version", e(plan.get("schema_version"))),
        ("created", e(plan.get("created_at"))),
    ]
    return f'<table class="kv" id="parameters"><tbody>{_rows(pairs)}</tbody></table>'


def _meter(spent: float, total: float, label: str) -> str:
    share = 0.0 if total <= 0 else min(max(spent / total, 0.0), 1.0)
    w = 300
    return (f'<svg class="meter" viewBox="0 0 {w} 14" width="{w}" height="14" '
            f'role="img" aria-label="{e(label)}"><title>{e(label)}</title>'
            f'<rect class="meter-bg" x="0" y="0" width="{w}" height="14"/>'
            f'<rect class="meter-fill" x="0" y="0" width="{share * w:.1f}" height="14"/></svg>')


def _budget(data: CardData) -> str:
    if data.budget is None and data.ledger_findings is None:
        return ('<p class="muted">No store given (<code>--db</code>): the budget history and the ledger check '
                'are not shown. The plan names its ledger row: release '
                f'<code>{e(data.plan.get("release_id"))}</code>.</p>')
    st = data.budget
    ok = not data.ledger_findings
    out = [f'<p>{_badge(ok, "ledger verified: hash chain, every measurement’s privacy map and d_in" if ok else "ledger check failed")}'
           f' <span class="muted">{_store_name(data)}</span></p>']
    if data.ledger_findings:
        out.append('<ul class="findings">' + "".join(f"<li>{e(f.line())}</li>" for f in data.ledger_findings) + "</ul>")
    if st is None:
        out.append('<p class="muted">The store has no budget.</p>')
        return "".join(out)
    out.append(f'<p>Dataset <strong>{e(st.dataset)}</strong>: total ε = {_g(st.epsilon_total, 6)}, '
               f'δ = {_g(st.delta_total, 3)}; spent ε = {_g(st.epsilon_spent, 6)}, δ = {_g(st.delta_spent, 3)}; '
               f'<strong>left ε = {_g(st.epsilon_remaining, 6)}, δ = {_g(st.delta_remaining, 3)}</strong></p>')
    out.append(f'<p class="meters">ε {_meter(st.epsilon_spent, st.epsilon_total, "share of ε spent")} '
               f'δ {_meter(st.delta_spent, st.delta_total, "share of δ spent")}</p>')
    out.append(_accountant(st))
    rows = []
    for i, r in enumerate(st.releases, start=1):
        mine = r["release_id"] == data.plan.get("release_id")
        chain = str(r.get("chain") or "")
        match = ""
        if mine:
            match = " " + _badge(chain == data.plan.get("ledger_chain"), "this plan")
        p = r.get("params") or {}
        rows.append(f'<tr class="{"this" if mine else ""}"><td class="num">{i}</td><td>{e(r["created_at"])}</td>'
                    f'<td><code>{e(r["release_id"])}</code>{match}</td><td>{e(r["mechanism"])}</td>'
                    f'<td class="num">{_g(r["epsilon"], 6)}</td><td class="num">{_g(r["delta"], 3)}</td>'
                    f'<td>{e(p.get("unit", ""))}</td><td class="num">{e(p.get("L", ""))}</td>'
                    f'<td><code class="hash" title="{e(chain)}">{e(chain[:23])}…</code></td></tr>')
    out.append('<table id="budget-table"><thead><tr><th>#</th><th>when (UTC)</th><th>release</th><th>mechanism</th>'
               '<th>ε</th><th>δ</th><th>unit</th><th>L</th><th>chain hash</th></tr></thead><tbody>'
               + "".join(rows) + "</tbody></table>")
    if not st.releases:
        out.append('<p class="muted">No release has been charged to this dataset.</p>')
    return "".join(out)


def _accountant(st: Any) -> str:
    """The accountant that composes the dataset's releases, and its state."""
    comp = getattr(st, "composition", None)
    name = getattr(st, "accountant", "basic")
    if comp is None:
        return f'<p id="accountant">Accountant: <strong>{e(name)}</strong>.</p>'
    if comp.accountant == "zcdp":
        zcdp = (f'composed zCDP ρ = {_g(comp.rho, 6)} of {_g(comp.rho_limit, 6)} '
                f'(ε = {_g(comp.zcdp_epsilon, 6)} at δ = {_g(comp.zcdp_delta, 3)})' if comp.rho is not None
                else "no zCDP form for every release")
        how = (f'; basic composition Σε = {_g(comp.basic_epsilon, 6)}, Σδ = {_g(comp.basic_delta, 3)} of '
               f'δ = {_g(comp.basic_delta_limit, 3)}. A release is admitted while either fits; spent is counted by '
               f'{"zCDP" if comp.path == "zcdp" else "basic composition"}')
        return (f'<p id="accountant">Accountant: <strong>zcdp</strong>, {comp.releases} release(s): {zcdp}'
                f'{how} {_meter(comp.rho or 0.0, comp.rho_limit or 1.0, "share of ρ spent")}</p>')
    return (f'<p id="accountant">Accountant: <strong>basic</strong> (ε and δ of every release summed), '
            f'{comp.releases} release(s): Σε = {_g(comp.basic_epsilon, 6)}, Σδ = {_g(comp.basic_delta, 3)}.</p>')


def _summary(data: CardData) -> str:
    if data.summary_text is None:
        out = ['<p class="muted">No summary given (<code>--summary</code>).</p>']
    else:
        v = data.verdict
        out = [f'<p>{_badge(v.accepted, "accepted by the verifier (re-run now)" if v.accepted else "rejected by the verifier (re-run now)")}'
               f' <span class="muted">{_file(data.summary_path)}</span></p>',
               f'<blockquote id="summary-text">{e(data.summary_text)}</blockquote>']
        if not v.accepted:
            out.append('<ul class="findings">' + "".join(
                f"<li><code>{e(x.code)}</code> “{e(x.span)}”: {e(x.message)}</li>" for x in v.violations) + "</ul>")
    a = data.attempts
    if a is None:
        out.append('<p class="muted">No attempts file given (<code>--attempts</code>): how the text was produced '
                   'is not shown.</p>')
        return "".join(out)
    tries = [t for t in a["attempts"] if isinstance(t, dict)]
    model = [t for t in tries if t.get("source") == "llm"]
    if a.get("decoder") == "template":
        source = "the deterministic template decoder (no model)"
    elif a.get("fallback_used"):
        source = f"the template fallback, after {len(model)} rejected model attempt(s)"
    else:
        source = f"the model, accepted at attempt {len(model)}"
    out.append(f'<p id="summary-source">Final text from <strong>{e(source)}</strong>; decoder '
               f'<code>{e(a.get("decoder"))}</code>, R_max = {e(a.get("max_attempts"))}, '
               f'{len(model)} model attempt(s). <span class="muted">{_file(data.attempts_path)}</span></p>')
    rows = []
    for t in tries:
        codes = sorted({str(v.get("code")) for v in t.get("violations") or [] if isinstance(v, dict)})
        rows.append(f'<tr><td>{e(t.get("attempt"))}</td><td>{e(t.get("source"))}</td>'
                    f'<td>{"accepted" if t.get("accepted") else "rejected"}</td>'
                    f'<td class="num">{len(t.get("violations") or [])}</td><td>{e(", ".join(codes))}</td></tr>')
    out.append('<table id="attempts-table"><thead><tr><th>attempt</th><th>source</th><th>verdict</th>'
               '<th>violations</th><th>codes</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>")
    return "".join(out)


CSS = """
:root { --ink: #1b1f23; --muted: #5b6470; --line: #d5dae0; --bg: #ffffff; --panel: #f5f7fa;
        --ok: #1e7b34; --bad: #b3261e; --warn: #8a6d00; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 20px 24px 40px; }
header h1 { font-size: 24px; margin: 0 0 4px; }
header p { margin: 2px 0; }
h2 { font-size: 18px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
section { break-inside: auto; }
.muted { color: var(--muted); }
.badges { margin: 10px 0 0; display: flex; flex-wrap: wrap; gap: 6px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 13px; border: 1px solid; white-space: nowrap; }
.badge.ok { color: var(--ok); border-color: var(--ok); }
.badge.bad { color: var(--bad); border-color: var(--bad); }
.badge.warn { color: var(--warn); border-color: var(--warn); }
.alerts { border-left: 4px solid var(--bad); background: #fdf0ef; padding: 8px 12px; margin: 12px 0; }
.alerts li { margin: 2px 0; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 12px; font-size: 14px; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
thead th { background: var(--panel); font-weight: 600; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.desc { color: var(--muted); }
td.label { font-weight: 600; overflow-wrap: break-word; min-width: 9em; }
tr.this td { background: #eef5fc; }
table.kv th { width: 230px; font-weight: 600; background: none; white-space: normal; }
code { font: 13px/1.3 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
code.hash { overflow-wrap: anywhere; word-break: break-all; }
.bin { padding: 0 6px; border-radius: 3px; color: #fff; font-size: 13px; }
.bin-high { background: #2f6fa8; } .bin-moderate { background: #5a97cf; } .bin-low { background: #bcd5ec; color: #1b1f23; }
dl.guide { display: grid; grid-template-columns: 120px 1fr; gap: 4px 12px; margin: 0;
           background: var(--panel); padding: 10px 14px; border-radius: 6px; }
dl.guide dt { font-weight: 600; } dl.guide dd { margin: 0; }
.chart { overflow-x: auto; }
#mass-chart { max-width: 100%; height: auto; font: 12px system-ui, sans-serif; }
#mass-chart .grid { stroke: #e3e7ec; stroke-width: 1; }
#mass-chart .zero { stroke: #5b6470; stroke-width: 1.2; }
#mass-chart .label { font-size: 13px; fill: #1b1f23; }
#mass-chart .tick { fill: #5b6470; font-size: 11px; }
#mass-chart .axis { fill: #1b1f23; font-size: 12px; }
#mass-chart .errorbar line, #mass-chart .margin line { stroke: #111; stroke-width: 1.6; }
.meter-bg { fill: #e3e7ec; } .meter-fill { fill: #4f8fc6; }
.meters svg { vertical-align: middle; margin-right: 16px; }
blockquote { margin: 8px 0; padding: 10px 14px; background: var(--panel); border-left: 4px solid #4f8fc6;
             white-space: pre-wrap; }
ul.findings { margin: 4px 0 10px; padding-left: 20px; color: var(--bad); }
footer { margin-top: 30px; font-size: 12px; color: var(--muted); }
@media (max-width: 760px) {
  main { padding: 12px; }
  table.kv th { width: auto; }
  dl.guide { grid-template-columns: 1fr; }
  td.desc { display: none; }
}
@media print {
  @page { size: A4; margin: 14mm 12mm; }
  body { font-size: 10pt; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; margin-top: 16px; }
  tr, .atom, blockquote, dl.guide { break-inside: avoid; }
  thead { display: table-header-group; }
  .chart { overflow: visible; }
  #mass-chart { width: 100%; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  .screen-only { display: none; }
}
"""


def render(data: CardData) -> str:
    """The card as one HTML document (no I/O)."""
    from dpspin_sql import __version__

    plan = data.plan
    cost = plan.get("privacy_cost") or {}
    title = (f"Release card — {plan.get('mechanism')} plan, top {plan.get('L')} of {plan.get('m')}, "
             f"ε = {_g(cost.get('epsilon', plan.get('epsilon')), 4)}")
    segment_line = ""
    if isinstance(plan.get("segment"), str):   # one segment of a segmented plan (plan.segment_part)
        seg = plan.get("segmentation") or {}
        title += f" — segment {plan['segment']}"
        segment_line = (f'<p id="segment">Segment <strong>{e(plan["segment"])}</strong> of a release segmented by '
                        f'{e(seg.get("name"))} ({len(seg.get("labels") or [])} segments, one charge, '
                        f'{e(seg.get("admission"))} admission): ranks are within the segment, and its intervals hold '
                        "together with every other segment's.</p>")
    badges = [_badge(plan.get("noise_source") == "opendp", f"noise: {plan.get('noise_source', 'unknown')}")]
    if data.ledger_findings is None:
        badges.append(_badge(None, "ledger not read (no --db)"))
    else:
        badges.append(_badge(not data.ledger_findings and _this_row(data) is not None,
                             "ledger verified, release found" if not data.ledger_findings and _this_row(data)
                             else "ledger problem"))
    if data.verdict is None:
        badges.append(_badge(None, "no summary"))
    else:
        badges.append(_badge(data.verdict.accepted, "summary accepted" if data.verdict.accepted else "summary rejected"))
    alerts = ""
    if data.notes:
        alerts = '<div class="alerts" role="alert"><strong>Check:</strong><ul>' + "".join(
            f"<li>{e(n)}</li>" for n in data.notes) + "</ul></div>"
    body = f"""<main>
<header>
<h1>{e(title)}</h1>
<p>Release <code>{e(plan.get('release_id'))}</code> · created {e(plan.get('created_at'))} ·
{e(plan.get('unit'))} level, {e(plan.get('adjacency'))} · plan file {_file(data.plan_path)}</p>
<p class="muted">Dictionary <code class="hash">{e(plan.get('dictionary'))}</code></p>
{segment_line}
<div class="badges">{''.join(badges)}</div>
</header>
{alerts}
<section id="reading"><h2>How to read this plan</h2>{_reading_guide(plan)}</section>
<section id="plan"><h2>The plan: {len(plan['atoms'])} admitted atoms</h2>{_plan_table(plan)}
<div class="chart">{chart_svg(plan)}</div></section>
<section id="mechanism"><h2>Mechanism and public parameters</h2>{_parameters(plan, data.dictionary_note)}</section>
<section id="budget"><h2>Budget history (ledger)</h2>{_budget(data)}</section>
<section id="summary"><h2>Published summary</h2>{_summary(data)}</section>
<footer>Made by dpspin-sql {e(__version__)} at {e(data.generated_at)} from public inputs only (the plan, its
public dictionary, the ledger’s public rows, the summary). Fields are explained in docs/PLAN.md.</footer>
</main>"""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<title>{e(title)}</title>
<style>{CSS}</style>
</head>
<body>
{body}
</body>
</html>
"""


def write_card(data: CardData, out: str | Path) -> Path:
    from dpspin_sql.outputs import write_text_atomic

    return write_text_atomic(out, render(data))
