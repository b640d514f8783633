"""The comparison card: one self-contained HTML page about a comparison (`dpspin card AB.json`).

Both sides (their releases and public parameters), then per atom both released masses
with the comparison's intervals, the difference b − a with its interval and the ratio,
what is supported, the atoms admitted on one side only (and what that does and does not
mean under top-L admission), rank swaps, and a chart of the differences against zero.
Like the release card (card.py): no script, nothing loaded, every string escaped.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from dpspin_sql.card import CSS, _badge, _file, _g, _nice_step, _num, _rows, e, label_text
from dpspin_sql.chart_labels import chart_lines

__all__ = ["render_comparison", "write_comparison_card"]

CHANGE_WORDS = {"rose": "rose", "fell": "fell", "no_supported_change": "no supported change"}
EXTRA_CSS = """
.wide { overflow-x: auto; }
#comparison-table td.label { min-width: 11em; overflow-wrap: normal; }
#comparison-table tr.one-sided td { background: #fafbfc; }
.change-rose { color: #1e7b34; font-weight: 600; } .change-fell { color: #b3261e; font-weight: 600; }
.change-no_supported_change { color: #5b6470; }
#difference-chart { max-width: 100%; height: auto; font: 12px system-ui, sans-serif; }
#difference-chart .grid { stroke: #e3e7ec; stroke-width: 1; }
#difference-chart .zero { stroke: #1b1f23; stroke-width: 1.6; }
#difference-chart .label { font-size: 13px; fill: #1b1f23; }
#difference-chart .tick { fill: #5b6470; font-size: 11px; }
#difference-chart .axis { fill: #1b1f23; font-size: 12px; }
#difference-chart .errorbar line { stroke: #111; stroke-width: 1.6; }
#difference-chart .open line { stroke-dasharray: 4 3; }
"""


def _iv(iv: Any) -> str:
    if not isinstance(iv, list) or len(iv) != 2:
        return "–"
    lo = _num(iv[0]) if iv[0] is not None else "−∞"
    hi = _num(iv[1]) if iv[1] is not None else "∞"
    return f"{lo} – {hi}"


def _ratio_iv(iv: Any) -> str:
    if not isinstance(iv, list) or len(iv) != 2:
        return "–"
    return f"{_num(iv[0], 2)} – " + (_num(iv[1], 2) if iv[1] is not None else "∞")


def _change(row: dict) -> str:
    change = str(row.get("change"))
    text = CHANGE_WORDS.get(change, change)
    if row.get("about_the_same"):
        text += " · about the same"
    return f'<span class="change-{e(change)}">{e(text)}</span>'


def _sides(c: dict) -> str:
    a, b = c["a"], c["b"]
    fields = [("name", "name"), ("plan file", "plan"), ("segment", "segment"), ("mechanism", "mechanism"),
              ("noise (scale)", None), ("ε, δ", None), ("unit, adjacency", None), ("K, B", None), ("L of m", None),
              ("admission", "admission"), ("admitted", "admitted"), ("lowest admitted noisy mass", "lowest_admitted"),
              ("interval half-width here", "half_width"), ("release id", "release_id"),
              ("ledger chain", "ledger_chain"), ("created", "created_at")]

    def cell(side: dict, label: str, key: str | None) -> str:
        if label == "noise (scale)":
            return f"{e(side.get('noise'))} ({_g(side.get('noise_scale'))})"
        if label == "ε, δ":
            return f"ε = {_g(side.get('epsilon'), 6)}, δ = {_g(side.get('delta'), 3)}"
        if label == "unit, adjacency":
            return f"{e(side.get('unit'))}, {e(side.get('adjacency'))}"
        if label == "K, B":
            return f"K = {_g(side.get('K'))}, B = {_g(side.get('B'))}"
        if label == "L of m":
            return f"{_g(side.get('L'))} of {_g(side.get('m'))}"
        value = side.get(key) if key else None
        if key in ("release_id", "ledger_chain"):
            return f'<code class="hash">{e(value)}</code>'
        if isinstance(value, float):
            return _g(value)
        return e(value if value is not None else "–")

    rows = "".join(f'<tr><th scope="row">{e(label)}</th><td>{cell(a, label, key)}</td><td>{cell(b, label, key)}</td>'
                   "</tr>" for label, key in fields)
    return (f'<table id="sides"><thead><tr><th></th><th scope="col">a: {e(a.get("name"))}</th>'
            f'<th scope="col">b: {e(b.get("name"))}</th></tr></thead><tbody>{rows}</tbody></table>')


def _table(c: dict) -> str:
    a, b = c["a"]["name"], c["b"]["name"]
    conf = f"{c['confidence'] * 100:g}%"
    head = ["atom", f"a: {a}", f"{conf} interval", f"b: {b}", f"{conf} interval", "b − a", f"{conf} interval",
            "ratio b/a", f"{conf} interval", "rank a → b", "change"]
    rows = []
    for r in c["atoms"]:
        rows.append(f'<tr data-atom-id="{e(r["atom_id"])}"><td class="label">{e(r["label"])}</td>'
                    f'<td class="num">{_num(r["a"]["noisy_mass"])}</td><td class="num">{_iv(r["a"]["interval"])}</td>'
                    f'<td class="num">{_num(r["b"]["noisy_mass"])}</td><td class="num">{_iv(r["b"]["interval"])}</td>'
                    f'<td class="num">{_num(r["difference"])}</td><td class="num">{_iv(r["difference_interval"])}</td>'
                    f'<td class="num">{_num(r["ratio"], 2) if r.get("ratio") is not None else "–"}</td>'
                    f'<td class="num">{_ratio_iv(r.get("ratio_interval"))}</td>'
                    f'<td class="num">{int(r["a"]["rank"])} → {int(r["b"]["rank"])}</td><td>{_change(r)}</td></tr>')
    for key, side in (("only_in_a", "a"), ("only_in_b", "b")):
        for r in c[key]:
            here = r[side]
            mine = (f'<td class="num">{_num(here["noisy_mass"])}</td><td class="num">{_iv(here["interval"])}</td>')
            upper = r["b" if side == "a" else "a"].get("upper_bound")
            other = (f'<td class="num">not admitted</td><td class="num">'
                     f'{"≤ " + _num(upper) if upper is not None else "no bound"}</td>')
            cells = mine + other if side == "a" else other + mine
            rank = f"{int(here['rank'])} → –" if side == "a" else f"– → {int(here['rank'])}"
            rows.append(f'<tr class="one-sided" data-atom-id="{e(r["atom_id"])}"><td class="label">{e(r["label"])}</td>'
                        f'{cells}<td class="num">–</td><td class="num">{_iv(r["difference_interval"])}</td>'
                        f'<td class="num">–</td><td class="num">–</td><td class="num">{rank}</td><td>{_change(r)}</td></tr>')
    ths = "".join(f'<th scope="col">{e(h)}</th>' for h in head)
    return f'<table id="comparison-table"><thead><tr>{ths}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def chart_svg(c: dict) -> str:
    """One row per atom: the difference b − a as a dot with its interval; zero is the thick line."""
    rows = [(r["label"], r["difference"], r["difference_interval"]) for r in c["atoms"]]
    rows += [(r["label"], None, r["difference_interval"]) for key in ("only_in_a", "only_in_b") for r in c[key]]
    if not rows:
        return '<p class="muted">No atom is admitted on either side: nothing to draw.</p>'
    finite = [v for _, d, iv in rows for v in ([d] if d is not None else []) + [x for x in iv if x is not None]]
    lo, hi = min(0.0, *finite), max(0.0, *finite)
    if hi - lo <= 0:
        hi = lo + 1.0
    step = _nice_step(hi - lo)
    lo, hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
    shown = [chart_lines(label, [r[0] for r in rows]) for label, _, _ in rows]
    label_w, plot_w, right, top, bottom = 240, 780, 40, 16, 48
    row_h = 38 if any(len(s) > 1 for s in shown) else 28
    width, height = label_w + plot_w + right, top + row_h * len(rows) + bottom

    def x(v: float) -> float:
        return label_w + (v - lo) / (hi - lo) * plot_w

    parts = [f'<svg id="difference-chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             'aria-labelledby="dchart-title dchart-desc">',
             f'<title id="dchart-title">Differences b − a of {len(rows)} atoms</title>',
             '<desc id="dchart-desc">One row per atom: the dot is the released difference, the line its interval; '
             'dashed lines run on without bound.</desc>']
    axis_y = top + row_h * len(rows)
    t = lo
    while t <= hi + step / 1000:
        cls = "zero" if abs(t) < step / 1000 else "grid"
        parts.append(f'<line class="{cls}" x1="{x(t):.1f}" y1="{top - 4}" x2="{x(t):.1f}" y2="{axis_y}"/>')
        parts.append(f'<text class="tick" x="{x(t):.1f}" y="{axis_y + 16}" text-anchor="middle">{round(t, 10):g}</text>')
        t += step
    for i, (label, d, iv) in enumerate(rows):
        mid = top + i * row_h + row_h / 2
        il = x(iv[0]) if iv[0] is not None else x(lo)
        ih = x(iv[1]) if iv[1] is not None else x(hi)
        open_ = iv[0] is None or iv[1] is None
        tip = f"{label}: difference {_num(d) if d is not None else '(one side only)'}, interval {_iv(iv)}"
        parts.append(f'<g class="atom"><title>{e(tip)}</title>'
                     + label_text(shown[i], label_w - 8, mid) +
                     f'<g class="errorbar{" open" if open_ else ""}"><line x1="{il:.1f}" y1="{mid}" x2="{ih:.1f}" '
                     f'y2="{mid}"/></g>')
        if d is not None:
            parts.append(f'<circle cx="{x(d):.1f}" cy="{mid}" r="4" fill="#2f6fa8"/>')
        parts.append("</g>")
    parts.append(f'<text class="axis" x="{label_w + plot_w / 2:.0f}" y="{axis_y + 36}" text-anchor="middle">'
                 + e(f"difference b − a (mass); lines: {c['confidence'] * 100:g}% intervals, all holding together")
                 + "</text></svg>")
    return "".join(parts)


def _swaps(c: dict) -> str:
    swaps = c.get("rank_swaps") or []
    if not swaps:
        return '<p class="muted">No two atoms admitted in both plans changed order.</p>'
    items = "".join(f"<li>{e(s['label'])} overtook {e(s['overtook_label'])} — "
                    + ("supported (their intervals are apart on both sides)" if s.get("supported")
                       else "not supported (their intervals overlap on a side)") + "</li>" for s in swaps)
    return f'<ul id="rank-swaps">{items}</ul>'


def _guide(c: dict) -> str:
    notes = c.get("notes") or {}
    titles = (("difference", "Difference"), ("intervals", "Intervals"), ("change", "Change"),
              ("admission", "One side only"), ("choosing", "Choosing pairs"))
    items = [f"<dt>{t}</dt><dd>{e(notes[k])}</dd>" for k, t in titles if isinstance(notes.get(k), str)]
    fam = c.get("family") or {}
    items.append(f"<dt>Family</dt><dd>{e(fam.get('size'))} atoms ({e(fam.get('over'))}): {e(fam.get('why'))}; "
                 f"{e(fam.get('how'))}.</dd>")
    return f'<dl class="guide">{"".join(items)}</dl>'


def render_comparison(c: dict, path: str | None = None) -> str:
    from dpspin_sql import __version__
    from dpspin_sql.compare import validate_comparison

    validate_comparison(c)
    a, b = c["a"], c["b"]
    title = f"Comparison card — {a.get('name')} → {b.get('name')}"
    supported = sum(1 for r in c["atoms"] + c["only_in_a"] + c["only_in_b"] if r.get("supported"))
    badges = [_badge(c.get("noise_source") == "opendp", f"noise: {c.get('noise_source', 'unknown')}"),
              _badge(True, "post-processing of two plans: nothing charged"),
              _badge(None, f"{supported} supported change(s) at {c['confidence'] * 100:g}% family-wise")]
    header = _rows([("direction", "b − a (a positive difference: more common in b)"),
                    ("confidence", f"{c['confidence'] * 100:g}% family-wise over {e((c.get('family') or {}).get('size'))} "
                                   f"atoms, shared by {e(c.get('comparisons'))} comparison(s)"),
                    ("dictionary", f'<code class="hash">{e(c.get("dictionary"))}</code>'),
                    ("comparison file", _file(path) or "–"), ("created", e(c.get("created_at")))])
    body = f"""<main>
<header>
<h1>{e(title)}</h1>
<p>{len(c['atoms'])} atoms admitted in both plans; {len(c['only_in_a'])} only in a, {len(c['only_in_b'])} only in b.</p>
<div class="badges">{''.join(badges)}</div>
</header>
<section id="reading"><h2>How to read this comparison</h2>{_guide(c)}</section>
<section id="differences"><h2>Per atom: both sides, the difference and its interval</h2><div class="wide">{_table(c)}</div>
<div class="chart">{chart_svg(c)}</div></section>
<section id="swaps"><h2>Rank changes among atoms in both plans</h2>{_swaps(c)}</section>
<section id="sides-section"><h2>The two releases</h2>{_sides(c)}
<table class="kv"><tbody>{header}</tbody></table></section>
<footer>Made by dpspin-sql {e(__version__)} from public inputs only (two plans' released fields). Fields are explained
in docs/PLAN.md ("Comparisons").</footer>
</main>"""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<title>{e(title)}</title>
<style>{CSS}{EXTRA_CSS}</style>
</head>
<body>
{body}
</body>
</html>
"""


def write_comparison_card(c: dict, out: str | Path, path: str | None = None) -> Path:
    from dpspin_sql.outputs import write_text_atomic

    return write_text_atomic(out, render_comparison(c, path))
