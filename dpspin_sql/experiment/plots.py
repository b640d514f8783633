"""Figures (PNG, matplotlib Agg): per dataset and unit, mass_retained, overlap_at_L and
loss_L against ε with one line per mechanism and a min–max band across seeds; and the
probe atom's admission and mention rates against the injected support.

Readability rules, checked by tests/test_experiment_plots.py on the figure objects:

* the ε axis is logarithmic with a tick at every ε of the grid, labelled as a plain
  number (0.1, 0.25, 1, 4, 10), no minor ticks and no mathtext; when labels would touch
  they stand upright (and shrink if they still would);
* every y axis names its quantity and unit (mass retained and overlap@L are shares in
  [0, 1]; loss_L is in units of mass — each record contributes at most 1, each user at
  most B), and no axis goes below 0;
* a figure whose rows hold a single ε is a bar chart (one bar per mechanism, min–max
  error bars), not three near-empty line plots.

matplotlib is imported only when a figure is drawn, so the package works without it.
"""
from __future__ import annotations

from pathlib import Path

from dpspin_sql import mechanism_kinds

PANELS = (("mass_retained", "mass retained", "mass retained (share of the true top-L mass)"),
          ("overlap_at_L", "overlap@L", "overlap@L (share of the true top-L atoms)"),
          ("loss_L", "loss_L (true top-L mass not admitted)", "loss_L (units of mass)"))
FRACTIONS = {"mass_retained", "overlap_at_L"}
MECHANISMS = mechanism_kinds.NAMES
LABELS = {k.name: k.plot for k in mechanism_kinds.KINDS.values()}
SHORT = {k.name: k.plot_short for k in mechanism_kinds.KINDS.values()}
COLORS = {k.name: k.color for k in mechanism_kinds.KINDS.values()}


def _plt():
    """matplotlib's pyplot on the Agg backend (the `plots` extra)."""
    from dpspin_sql.extras import require

    matplotlib = require("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def eps_label(e: float) -> str:
    """A grid ε as a plain number: 0.1, 0.25, 1, 4, 10."""
    return f"{float(e):g}"


def _figure_groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    """One figure per (dataset, unit, B, n, m, K, L, δ of the δ-using mechanisms)."""
    deltas: dict[tuple, set] = {}
    for r in rows:
        base = (r["dataset"], r["unit"], r["B"], r["n"], r["m"], r["K"], r["L"])
        if r["mechanism"] != "laplace":
            deltas.setdefault(base, set()).add(r["delta"])
    figs: dict[tuple, list[dict]] = {}
    for r in rows:
        base = (r["dataset"], r["unit"], r["B"], r["n"], r["m"], r["K"], r["L"])
        ds = sorted(deltas.get(base, {0.0}))
        for d in ds if r["mechanism"] == "laplace" else [r["delta"]]:
            figs.setdefault(base + (d,), []).append(r)
    return figs


def _series(rows: list[dict], mech: str, metric: str) -> list[dict]:
    return sorted((r for r in rows if r["mechanism"] == mech and r.get(f"{metric}_mean") is not None),
                  key=lambda r: r["epsilon"])


def _y_limits(ax, metric: str, highs: list[float]) -> None:
    if metric in FRACTIONS:
        ax.set_ylim(0.0, 1.05)
        return
    top = max((h for h in highs if h is not None), default=0.0)
    ax.set_ylim(0.0, top * 1.08 if top > 0 else 1.0)


def utility_figure(rows: list[dict], title: str):
    """The three utility panels of one figure group (a matplotlib Figure, not yet saved)."""
    plt = _plt()
    eps = sorted({float(r["epsilon"]) for r in rows})
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.0))
    for ax, (metric, panel_title, ylabel) in zip(axes, PANELS):
        highs: list[float] = []
        if len(eps) == 1:
            _bars(ax, rows, metric, highs)
            ax.set_xlabel(f"mechanism (ε = {eps_label(eps[0])})")
        else:
            for mech in MECHANISMS:
                pts = _series(rows, mech, metric)
                if not pts:
                    continue
                x = [r["epsilon"] for r in pts]
                ax.plot(x, [r[f"{metric}_mean"] for r in pts], marker="o", ms=3, color=COLORS[mech],
                        label=LABELS[mech])
                ax.fill_between(x, [r[f"{metric}_min"] for r in pts], [r[f"{metric}_max"] for r in pts],
                                color=COLORS[mech], alpha=0.2, linewidth=0)
                highs += [r[f"{metric}_max"] for r in pts]
            _eps_axis(ax, eps)
            ax.set_xlabel("ε (log scale)")
        _y_limits(ax, metric, highs)
        ax.set_ylabel(ylabel)
        ax.set_title(panel_title, fontsize=10)
        ax.grid(alpha=0.3)
    _finish(fig, axes, title)
    declutter_x(fig, axes)
    return fig


def _bars(ax, rows: list[dict], metric: str, highs: list[float]) -> None:
    """Single-ε figure: one bar per mechanism (mean) with its min–max over seeds."""
    present = [m for m in MECHANISMS if _series(rows, m, metric)]
    for i, mech in enumerate(present):
        r = _series(rows, mech, metric)[0]
        mean, lo, hi = r[f"{metric}_mean"], r[f"{metric}_min"], r[f"{metric}_max"]
        ax.bar(i, mean, width=0.6, color=COLORS[mech], alpha=0.85)
        ax.errorbar(i, mean, yerr=[[max(mean - lo, 0.0)], [max(hi - mean, 0.0)]], color="black", capsize=4, lw=1)
        highs.append(hi)
    ax.set_xticks(range(len(present)), [SHORT[m] for m in present], fontsize=8)
    ax.set_xlim(-0.6, max(len(present), 1) - 0.4)


def _eps_axis(ax, eps: list[float]) -> None:
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullFormatter, NullLocator

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(eps))
    ax.xaxis.set_major_formatter(FixedFormatter([eps_label(e) for e in eps]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(eps[0] / 1.25, eps[-1] * 1.25)
    ax.tick_params(axis="x", labelsize=8)


def tick_label_boxes(fig, ax, *, layout: bool = True) -> list:
    """The drawn extents of the x tick labels that are visible (for the overlap check)."""
    if layout:
        fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]


def _overlapping(fig, ax) -> bool:
    boxes = sorted(tick_label_boxes(fig, ax, layout=False), key=lambda b: b.x0)
    return any(a.x1 + 1 > b.x0 for a, b in zip(boxes, boxes[1:]))


def declutter_x(fig, axes) -> None:
    """Stand the x tick labels upright, then shrink them, while two of them would overlap
    (every grid ε keeps its label)."""
    for rotation, size in ((90, None), (90, 6.5), (90, 5)):
        fig.draw_without_rendering()
        crowded = [ax for ax in axes if _overlapping(fig, ax)]
        if not crowded:
            return
        for ax in crowded:
            for t in ax.get_xticklabels():
                t.set_rotation(rotation)
                if size:
                    t.set_fontsize(size)
        fig.tight_layout()


def plot_utility(rows: list[dict], path: Path, title: str) -> Path:
    return _save(utility_figure(rows, title), path)


def probe_figure(rows: list[dict], title: str):
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.0))
    series: dict[tuple, list[dict]] = {}
    for r in rows:
        series.setdefault((r["mechanism"], r["epsilon"]), []).append(r)
    for ax, (metric, label, ylabel) in zip(axes, (("probe_admitted", "plan admission rate", "share of runs admitting the probe"),
                                                  ("probe_mentioned", "summary mention rate", "share of summaries naming it"))):
        for (mech, eps), pts in sorted(series.items()):
            pts = sorted(pts, key=lambda r: r["probe_support"])
            ax.plot([r["probe_support"] for r in pts], [r.get(f"{metric}_mean") or 0.0 for r in pts], marker="o",
                    ms=3, color=COLORS.get(mech), label=f"{LABELS.get(mech, mech)}, ε={eps_label(eps)}",
                    linestyle="-" if eps == max(e for _, e in series) else "--")
        ax.set_xlabel("injected support s (probe records)")
        ax.set_ylabel(ylabel)
        ax.set_ylim(0.0, 1.05)
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
    _finish(fig, axes, title)
    return fig


def plot_probe(rows: list[dict], path: Path, title: str) -> Path:
    return _save(probe_figure(rows, title), path)


def _finish(fig, axes, title: str) -> None:
    """Legend, title and layout: the same for every figure."""
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def write_all(out_dir: str | Path, tables: dict) -> list[Path]:
    out_dir = Path(out_dir)
    pdir = out_dir / "plots"
    pdir.mkdir(parents=True, exist_ok=True)
    for old in pdir.glob("*.png"):
        old.unlink()
    written = []
    dpspin_rows = [r for r in tables["rows"] if r["mechanism"] in LABELS]   # baselines: comparison.py
    for (ds, unit, B, n, m, K, L, delta), rows in sorted(_figure_groups(dpspin_rows).items(), key=str):
        size = f"n{n}" if unit == "record" else f"u{n}"
        name = f"{ds}-{unit}" + (f"-B{B:g}" if unit == "user" else "") + f"-{size}-m{m}-K{K}-L{L}-d{delta:g}.png"
        title = (f"{ds}, {unit} level" + (f", B={B:g}" if unit == "user" else "") +
                 f", {'n_records' if unit == 'record' else 'n_users'}={n}, m={m}, K={K}, L={L}, δ={delta:g} "
                 "(mean, min–max over seeds)")
        written.append(plot_utility(rows, pdir / name, title))
    probe_rows = tables.get("probe_rows") or []
    groups: dict[tuple, list[dict]] = {}
    for r in probe_rows:
        groups.setdefault((r["dataset"], r["unit"], r["n"], r["m"], r["K"], r["L"]), []).append(r)
    for (ds, unit, n, m, K, L), rows in groups.items():
        written.append(plot_probe(rows, pdir / f"probe-{ds}-{unit}-n{n}-m{m}-K{K}-L{L}.png",
                                  f"probe atom, {ds} {unit} level, n={n}, m={m}, K={K}, L={L}"))
    from dpspin_sql.experiment import comparison

    written += comparison.write_figures(out_dir)
    return written
