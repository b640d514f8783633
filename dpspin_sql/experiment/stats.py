"""Dataset statistics per preset (paper appendices D.7 / E.8): records, users, records with
a valid user id, users with several records, the per-user contribution distribution,
text-length statistics and the most frequent categories; plus the aux/target split and
dictionary of every preparation the grid made."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CATEGORIES: dict[str, list[tuple[str, str, str, str | None]]] = {
    # (title, metadata field, how to read it, separator): the last three are parameters of
    # queries/experiment_stats_top_categories.sql: 'string' is the field as a JSON string,
    # 'json' the JSON text of the value, 'split' several values per record.
    "cfpb": [("product", "product", "string", None),
             ("issue", "issue", "string", None)],
    "amazon": [("rating", "rating", "json", None),
               ("parent_asin", "parent_asin", "string", None)],
    "yelp": [("business category", "categories", "split", "; "),
             ("stars", "stars", "json", None)],
}


def dataset_stats(preset: str, path: str | Path, businesses: str | Path | None = None, top: int = 10) -> dict:
    from dpspin_sql import presets, queries, store

    con = store.connect(":memory:", create=True)
    try:
        opts: dict[str, Any] = {"businesses": businesses} if businesses else {}
        presets.load_preset(con, preset, path, **opts)
        records, users, with_uid = con.execute(queries.load("experiment_stats_counts")).fetchall()[0]
        out: dict = {"preset": preset, "input": str(path), "records": records, "users": users,
                     "records_with_valid_user_id": with_uid}
        if users:
            cur = con.execute(queries.load("experiment_stats_records_per_user"))
            row = cur.fetchall()[0]
            multi, mean, p50, p90, p99, mx = row[:6]
            out["users_with_several_records"] = multi
            dist = {d[0]: v for d, v in zip(cur.description[6:], row[6:])}
            out["records_per_user"] = {"mean": mean, "p50": p50, "p90": p90, "p99": p99, "max": mx,
                                       "users_by_records": dist}
        else:
            out["users_with_several_records"] = 0
            out["records_per_user"] = None
        lengths = con.execute(queries.load("experiment_stats_text_length")).fetchall()[0]
        for i, unit in enumerate(("chars", "words")):
            mean, p10, p50, p90, mx = lengths[5 * i:5 * i + 5]
            out[f"text_{unit}"] = {"mean": mean, "p10": p10, "p50": p50, "p90": p90, "max": mx}
        cats = {}
        for title, field, how, sep in CATEGORIES.get(preset, []):
            rows = con.execute(queries.load("experiment_stats_top_categories"),
                               {"field": field, "how": how, "sep": sep, "top": int(top)}).fetchall()
            cats[title] = [[v, c] for v, c in rows]
        out["top_categories"] = cats
        return out
    finally:
        con.close()


def prep_summaries(out_dir: Path) -> list[dict]:
    rows = []
    for p in sorted((out_dir / "prep").glob("*.json")):
        m = json.loads(p.read_text(encoding="utf-8"))
        man = m.get("atoms_manifest") or {}
        rows.append({"prep_key": m["prep_key"], "dataset": m["dataset"], "unit": m["unit"], "split": m["split"],
                     "m": m.get("m"), "m_requested": m.get("m_requested"), "builder": m.get("builder"),
                     "threshold": man.get("threshold"),
                     "candidates": man.get("candidates", (man.get("counts") or {}).get("candidates")),
                     "above_threshold": (man.get("counts") or {}).get("above_threshold"),
                     "dictionary": m.get("dictionary"), "assign": m.get("assign"), "seconds": m.get("seconds")})
    return rows


def to_markdown(name: str, s: dict) -> str:
    lines = [f"## {name} ({s['preset']})", "",
             f"- records: {s['records']:,}", f"- users: {s['users']:,}",
             f"- records with a valid user id: {s['records_with_valid_user_id']:,}",
             f"- users with several records: {s['users_with_several_records']:,}"]
    rpu = s.get("records_per_user")
    if rpu:
        lines.append(f"- records per user: mean {rpu['mean']:.2f}, median {rpu['p50']:g}, p90 {rpu['p90']:g}, "
                     f"p99 {rpu['p99']:g}, max {rpu['max']}")
        lines.append("- users by number of records: " + ", ".join(f"{k}: {v:,}" for k, v in rpu["users_by_records"].items()))
    for unit in ("chars", "words"):
        t = s[f"text_{unit}"]
        lines.append(f"- text length ({unit}): mean {t['mean']:.1f}, p10 {t['p10']:g}, median {t['p50']:g}, "
                     f"p90 {t['p90']:g}, max {t['max']}")
    for title, rows in s.get("top_categories", {}).items():
        lines.append(f"- most frequent {title}: " + "; ".join(f"{v} ({c:,})" for v, c in rows))
    for p in s.get("preparations", []):
        sp = p["split"]
        lines.append(f"- prep `{p['prep_key']}` ({p['unit']} split): aux {sp['aux_records']:,} records / "
                     f"{sp['aux_users']:,} users, non-aux {sp['target_records'] + sp['excluded_records']:,} records; "
                     f"dictionary m={p['m']} (requested {p['m_requested']}, builder {p['builder']}, "
                     f"threshold {p['threshold']}, {p['candidates']} candidates"
                     + (f", {p['above_threshold']} above the threshold" if p.get("above_threshold") is not None else "")
                     + ")")
    return "\n".join(lines) + "\n"


def write_all(grid, out_dir: str | Path) -> dict:
    """stats/<dataset>.json and stats/datasets.md for every dataset of the grid."""
    out_dir = Path(out_dir)
    sdir = out_dir / "stats"
    sdir.mkdir(parents=True, exist_ok=True)
    seen: dict[str, dict] = {}
    for run in grid.runs:
        seen.setdefault(run["dataset"], run)
    preps = prep_summaries(out_dir)
    result, md = {}, ["# Dataset statistics", ""]
    for name, run in seen.items():
        path = sdir / f"{name}.json"
        if path.exists():
            s = json.loads(path.read_text(encoding="utf-8"))
        else:
            try:
                s = dataset_stats(run["preset"], run["input"], run.get("businesses"))
            except Exception as exc:  # statistics never stop a grid
                s = {"preset": run["preset"], "error": str(exc)}
        s["preparations"] = [p for p in preps if p["dataset"] == name]
        path.write_text(json.dumps(s, indent=1, default=str) + "\n", encoding="utf-8")
        result[name] = s
        md.append(to_markdown(name, s) if "error" not in s else f"## {name}\n\nerror: {s['error']}\n")
    (sdir / "datasets.md").write_text("\n".join(md), encoding="utf-8")
    return result
