"""Figures (PNG, matplotlib Agg): per dataset and unit, mass_retained, overlap_at_L and
loss_L against ε with one line per mechanism and a min–max band across seeds; and the
probe atom's admission and mention rates against the injected support."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PANELS = (("mass_retained", "mass retained"), ("overlap_at_L", "overlap@L"), ("loss_L", "loss_L"))
LABELS = {"laplace": "Laplace sketch + top-L", "gaussian": "Gaussian sketch + top-L",
          "private_topL": "private top-L + Gaussian values"}
COLORS = {"laplace": "tab:blue", "gaussian": "tab:orange", "private_topL": "tab:green"}


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


def plot_utility(rows: list[dict], path: Path, title: str) -> Path:
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (metric, label) in zip(axes, PANELS):
        for mech in ("laplace", "gaussian", "private_topL"):
            pts = sorted((r for r in rows if r["mechanism"] == mech and r.get(f"{metric}_mean") is not None),
                         key=lambda r: r["epsilon"])
            if not pts:
                continue
            x = [r["epsilon"] for r in pts]
            ax.plot(x, [r[f"{metric}_mean"] for r in pts], marker="o", ms=3, color=COLORS[mech], label=LABELS[mech])
            ax.fill_between(x, [r[f"{metric}_min"] for r in pts], [r[f"{metric}_max"] for r in pts],
                            color=COLORS[mech], alpha=0.2, linewidth=0)
        ax.set_xscale("log")
        ax.set_xlabel("ε")
        ax.set_title(label)
        if metric != "loss_L":
            ax.set_ylim(-0.02, 1.05)
        ax.grid(alpha=0.3)
    return _finish(fig, axes, title, path)


def plot_probe(rows: list[dict], path: Path, title: str) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    series: dict[tuple, list[dict]] = {}
    for r in rows:
        series.setdefault((r["mechanism"], r["epsilon"]), []).append(r)
    for ax, (metric, label) in zip(axes, (("probe_admitted", "plan admission rate"),
                                          ("probe_mentioned", "summary mention rate"))):
        for (mech, eps), pts in sorted(series.items()):
            pts = sorted(pts, key=lambda r: r["probe_support"])
            ax.plot([r["probe_support"] for r in pts], [r.get(f"{metric}_mean") or 0.0 for r in pts], marker="o",
                    ms=3, color=COLORS.get(mech), label=f"{LABELS.get(mech, mech)}, ε={eps:g}",
                    linestyle="-" if eps == max(e for _, e in series) else "--")
        ax.set_xlabel("injected support s (probe records)")
        ax.set_ylim(-0.02, 1.05)
        ax.set_title(label)
        ax.grid(alpha=0.3)
    return _finish(fig, axes, title, path)


def _finish(fig, axes, title: str, path: Path) -> Path:
    """Legend, title and file: the same for every figure."""
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
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
                 "(mean, min–max band over seeds)")
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
