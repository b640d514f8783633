"""Grouped summaries across seeds (docs/DESIGN.md §9), written as CSV and Markdown.

Runs with the same dataset, unit, sample size (n_records or n_users), m, K, L, mechanism,
ε, δ and B form one group; each metric is summarised by mean, min, max and standard
deviation over the group's finished runs. The effective record count of a user-level
run varies with the sampled users, so it is a reported statistic, never a key. Probe
runs are grouped separately, with the injected support s as an extra key.
"""
from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from dpspin_sql import mechanism_kinds
from dpspin_sql.experiment.artifacts import load_runs
from dpspin_sql.experiment.metrics import describe

KEYS = ("dataset", "unit", "n", "m", "K", "L", "mechanism", "epsilon", "delta", "B")
PROBE_KEYS = KEYS + ("probe_support",)
METRICS = ("overlap_at_L", "mass_retained", "loss_L", "mass_topL", "boundary_gap", "sketch_mass", "noise_scale",
           "full_err_linf", "full_err_l1", "full_err_l2", "sel_err_linf", "sel_err_l1", "sel_err_l2",
           "verifier_accepted", "verifier_attempts", "verifier_fallback", "unsupported_atom_rate",
           "unsupported_comparison_rate",
           "text_token_jaccard", "text_bigram_jaccard", "text_keyphrase_jaccard", "text_tfidf_cosine",
           "truth_overlap_at_L", "truth_mass_retained", "truth_loss_L", "np_truth_overlap_at_L",
           "n_records_effective", "n_users_effective",
           "probe_admitted", "probe_mentioned", "probe_np_rank", "probe_np_mass", "probe_records_assigned")
STATS = ("mean", "min", "max", "std")
MECH_ORDER = {name: i for i, name in enumerate(mechanism_kinds.NAMES)}


def group_key(config: dict, probe: bool = False) -> tuple:
    """The grouping key of one run's final configuration (docs/DESIGN.md §9)."""
    n = config.get("n_records") if config["unit"] == "record" else config.get("n_users")
    assert n is not None, "a run's config records its realised n_records / n_users"
    m = config.get("m_effective", config.get("m"))
    mech = config["mechanism"]
    if config.get("method", "dpspin") != "dpspin":   # baselines and references (comparison.py)
        mech = config["method"] if mech == "none" else f"{config['method']}:{mech}"
    key: tuple = (config["dataset"], config["unit"], int(n), m, int(config["K"]), int(config["L"]), mech,
           float(config["epsilon"]), float(config["delta"]), float(config["B"]))
    if probe:
        key += (int(config["probe"]["support"]),)
    return key


def group_runs(runs: list[dict], probe: bool = False) -> list[dict]:
    """One row per group: the keys, run counts, and mean/min/max/std of every metric."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        cfg = r["config"]
        if bool(cfg.get("probe")) != probe:
            continue
        if r["metrics"] is None and cfg.get("m_effective") is None:
            # a failed run has no realised m: file it under its requested m
            cfg = dict(cfg, m_effective=cfg.get("m"))
        groups.setdefault(group_key(cfg, probe), []).append(r)
    rows = []
    for key, members in groups.items():
        row = dict(zip(PROBE_KEYS if probe else KEYS, key))
        done = [r["metrics"] for r in members if r["metrics"] is not None]
        row["runs"] = len(done)
        row["failed"] = len(members) - len(done)
        row["seeds"] = ",".join(str(r["config"]["seed"]) for r in members if r["metrics"] is not None)
        for metric in METRICS:
            d = describe(x.get(metric) for x in done)
            if d["n"] == 0:
                continue
            for s in STATS:
                row[f"{metric}_{s}"] = d[s]
        rows.append(row)
    rows.sort(key=_sort_key)
    return rows


def _sort_key(row: dict):
    return (row["dataset"], row["unit"], row["n"], row["m"] if row["m"] is not None else -1, row["K"], row["L"],
            row["B"], row["delta"] if row["mechanism"] != "laplace" else -1, MECH_ORDER.get(row["mechanism"], 9),
            row["epsilon"], row.get("probe_support", 0))


def to_csv(rows: list[dict], keys=KEYS) -> str:
    cols = list(keys) + ["runs", "failed", "seeds"]
    for metric in METRICS:
        if any(f"{metric}_mean" in r for r in rows):
            cols += [f"{metric}_{s}" for s in STATS]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: _csv_value(r.get(c)) for c in cols})
    return buf.getvalue()


def _csv_value(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return "" if v is None else v


def _cell(row: dict, metric: str, digits: int = 3, spread: bool = True) -> str:
    mean = row.get(f"{metric}_mean")
    if mean is None:
        return "–"
    if not spread:
        return _num(mean, digits)
    return f"{_num(mean, digits)} ± {_num(row[f'{metric}_std'], digits)} [{_num(row[f'{metric}_min'], digits)}, " \
           f"{_num(row[f'{metric}_max'], digits)}]"


def _num(x: float, digits: int) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.1f}"
    return f"{x:.{digits}f}"


MD_METRICS = (("overlap@L", "overlap_at_L", 3), ("mass_retained", "mass_retained", 3), ("loss_L", "loss_L", 2))
MD_EXTRA = (("sel_err_l2", "sel_err_l2", 2), ("full_err_l2", "full_err_l2", 2), ("verifier acc.", "verifier_accepted", 2),
            ("TF-IDF cos", "text_tfidf_cosine", 3))


def to_markdown(rows: list[dict], epsilons: list[float] | None = None, title: str | None = None) -> str:
    """Per-dataset tables; `epsilons` keeps only those ε. Cells: mean ± std [min, max]."""
    if epsilons is not None:
        want = {float(e) for e in epsilons}
        rows = [r for r in rows if float(r["epsilon"]) in want]
    out = [f"# {title}", ""] if title else []
    datasets = sorted({r["dataset"] for r in rows})
    for ds in datasets:
        ds_rows = [r for r in rows if r["dataset"] == ds]
        for unit in ("record", "user"):
            urows = [r for r in ds_rows if r["unit"] == unit]
            if not urows:
                continue
            out.append(f"## {ds} — {unit} level")
            out.append("")
            truth = any("truth_mass_retained_mean" in r for r in urows)
            head = ["n_records" if unit == "record" else "n_users", "m", "K", "L"]
            head += ["B"] if unit == "user" else []
            head += ["mechanism", "ε", "δ", "runs"]
            head += [h for h, _, _ in MD_METRICS] + [h for h, _, _ in MD_EXTRA]
            if truth:
                head += ["truth overlap@L", "truth mass_retained"]
            if unit == "user":
                head += ["eff. records mean [min, max] (std)"]
            out.append("| " + " | ".join(head) + " |")
            out.append("|" + "---|" * len(head))
            for r in urows:
                cells = [str(r["n"]), str(r["m"]), str(r["K"]), str(r["L"])]
                cells += [f"{r['B']:g}"] if unit == "user" else []
                cells += [r["mechanism"], f"{r['epsilon']:g}", f"{r['delta']:g}",
                          f"{r['runs']}" + (f" (+{r['failed']} failed)" if r["failed"] else "")]
                cells += [_cell(r, k, d) for _, k, d in MD_METRICS]
                cells += [_cell(r, k, d, spread=False) for _, k, d in MD_EXTRA]
                if truth:
                    cells += [_cell(r, "truth_overlap_at_L", 3, False), _cell(r, "truth_mass_retained", 3, False)]
                if unit == "user":
                    if r.get("n_records_effective_mean") is None:
                        cells.append("–")
                    else:
                        cells.append(f"{r['n_records_effective_mean']:.1f} [{r['n_records_effective_min']:.0f}, "
                                     f"{r['n_records_effective_max']:.0f}] ({r['n_records_effective_std']:.1f})")
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
    return "\n".join(out)


def probe_markdown(rows: list[dict]) -> str:
    out = ["## probe atom", "",
           "| dataset | unit | n | m | L | mechanism | ε | δ | s | runs | admission rate | mention rate | "
           "non-private rank mean [min, max] | probe records assigned to it |",
           "|" + "---|" * 14]
    for r in rows:
        rank = (f"{r['probe_np_rank_mean']:.1f} [{r['probe_np_rank_min']:.0f}, {r['probe_np_rank_max']:.0f}]"
                if r.get("probe_np_rank_mean") is not None else "–")
        out.append(f"| {r['dataset']} | {r['unit']} | {r['n']} | {r['m']} | {r['L']} | {r['mechanism']} | "
                   f"{r['epsilon']:g} | {r['delta']:g} | {r['probe_support']} | {r['runs']} | "
                   f"{_cell(r, 'probe_admitted', 2, False)} | {_cell(r, 'probe_mentioned', 2, False)} | {rank} | "
                   f"{_cell(r, 'probe_records_assigned', 1, False)} |")
    return "\n".join(out) + "\n"


def failures_markdown(runs: list[dict]) -> str:
    failed = [r for r in runs if r["error"] is not None]
    if not failed:
        return ""
    lines = ["## failed runs", ""]
    for r in failed:
        lines.append(f"- `{r['config']['run_id']}` ({r['error'].get('stage')}): {r['error'].get('type')}: "
                     f"{r['error'].get('message')}")
    return "\n".join(lines) + "\n"


def write_report(out: str | Path, epsilons: list[float] | None = None) -> dict:
    """Group the runs under `out` and write report/grouped.csv, grouped.md (and probe.*)."""
    out = Path(out)
    runs = load_runs(out)
    rows = group_runs(runs)
    probe_rows = group_runs(runs, probe=True)
    rdir = out / "report"
    rdir.mkdir(parents=True, exist_ok=True)
    (rdir / "grouped.csv").write_text(to_csv(rows), encoding="utf-8")
    md = to_markdown(rows, title="Grouped runs (mean ± std [min, max] over seeds)")
    if probe_rows:
        (rdir / "probe.csv").write_text(to_csv(probe_rows, PROBE_KEYS), encoding="utf-8")
        md += "\n" + probe_markdown(probe_rows)
    from dpspin_sql.experiment import comparison

    md += "\n" + comparison.write(out, runs, epsilons)
    md += "\n" + failures_markdown(runs)
    (rdir / "grouped.md").write_text(md, encoding="utf-8")
    if epsilons:
        (rdir / "grouped_selected_eps.md").write_text(
            to_markdown(rows, epsilons, title=f"Grouped runs at ε ∈ {{{', '.join(f'{e:g}' for e in epsilons)}}}"),
            encoding="utf-8")
    return {"rows": rows, "probe_rows": probe_rows, "markdown": md, "n_runs": len(runs),
            "n_failed": sum(1 for r in runs if r["error"] is not None)}
