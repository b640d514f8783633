"""A grid's output directory: which files a finished run has, and reading runs back.

    grid.yaml                   the grid file this directory belongs to
    prep/<prep_key>.duckdb      cached preparation: load → split → atoms (aux) → assign
    runs/<run_id>/              config.yaml, private_plan.json, summary.txt,
                                verifier_attempts.json, metrics.json  (or error.json);
                                a non-private reference has reference_plan.json instead
    stats/, report/, plots/     dataset statistics, grouped tables, figures

Both the runner (which writes runs) and the report (which reads them) use this module.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

RUN_FILES = ("config.yaml", "private_plan.json", "summary.txt", "verifier_attempts.json", "metrics.json")
OWNED = ("runs", "prep", "stats", "report", "plots", "grid.yaml")


def clean(out: Path) -> None:
    """Remove what an earlier grid left in `out` (only the harness's own entries)."""
    for name in OWNED:
        p = out / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def run_state(run_dir: Path) -> str:
    """'done', 'failed' or 'missing'."""
    if not run_dir.is_dir():
        return "missing"
    mpath = run_dir / "metrics.json"
    # a non-private reference writes reference_plan.json instead of private_plan.json
    plan_ok = (run_dir / "private_plan.json").exists() or (run_dir / "reference_plan.json").exists()
    if mpath.exists() and plan_ok and all((run_dir / f).exists() for f in RUN_FILES if f != "private_plan.json"):
        try:
            if json.loads(mpath.read_text(encoding="utf-8")).get("status") == "ok":
                return "done"
        except json.JSONDecodeError:
            pass
    return "failed"


def load_runs(out: str | Path) -> list[dict]:
    """Every finished or failed run under out/runs: {'config', 'metrics' | None, 'error' | None}."""
    runs = []
    for d in sorted((Path(out) / "runs").iterdir()) if (Path(out) / "runs").is_dir() else []:
        if not d.is_dir() or d.name.startswith("."):
            continue
        cfg_path = d / "config.yaml"
        if not cfg_path.exists():
            continue
        cfg = yaml.safe_load(cfg_path.read_text(encoding="utf-8"))
        state = run_state(d)
        entry = {"dir": d, "config": cfg, "metrics": None, "error": None}
        if state == "done":
            entry["metrics"] = json.loads((d / "metrics.json").read_text(encoding="utf-8"))
        elif (d / "error.json").exists():
            entry["error"] = json.loads((d / "error.json").read_text(encoding="utf-8"))
        runs.append(entry)
    return runs
