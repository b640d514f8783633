"""Run a grid: one directory of artifacts per run, resumable, with a clean-run option.

Layout under the output directory:

    grid.yaml                   the grid file this directory belongs to
    prep/<prep_key>.duckdb      cached preparation: load → split → atoms (aux) → assign
    prep/<prep_key>.json        its manifest (written last: a prep without it is rebuilt)
    runs/<run_id>/              config.yaml, private_plan.json, summary.txt,
                                verifier_attempts.json, metrics.json  (or error.json)
    stats/, report/, plots/     dataset statistics, grouped tables, figures

A run directory appears only when the run is over (it is written under a temporary name
and renamed), so a half-written run is one whose temporary directory is still there; it
is removed and redone. A finished run (metrics.json with status ok) is not recomputed; a
failed run (error.json) is retried on the next call.

Privacy bookkeeping: every release goes through `release.release` (`release_capturing`), charged
to the prep store's ledger under a dataset of its own (`<run_id>#<attempt>`) whose budget
is that one release's cost — each run models one independent release of its sample.
Mechanism noise is OpenDP's (secure randomness); seeds select protected units only.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import yaml

from dpspin_sql import queries
from dpspin_sql.errors import BadInput
from dpspin_sql.experiment import metrics as M
from dpspin_sql.experiment.artifacts import OWNED, RUN_FILES, clean, load_runs, run_state  # noqa: F401
from dpspin_sql.experiment.grid import Grid, load_grid


@dataclasses.dataclass
class GridResult:
    out: Path
    total: int
    done_before: int
    ok: int
    failed: int
    seconds: float
    failures: list[tuple[str, str]]


# ------------------------------------------------------------------ directory state

def _claim_grid(out: Path, grid: Grid) -> None:
    """Write grid.yaml, or refuse to mix this grid's runs with another grid's."""
    text = yaml.safe_dump(grid.raw, sort_keys=True)
    gpath = out / "grid.yaml"
    if gpath.exists():
        old = gpath.read_text(encoding="utf-8")
        if yaml.safe_load(old) != yaml.safe_load(text):
            raise BadInput(f"{out} holds runs of a different grid; pass --clean to replace them, "
                           "or choose another --out")
    else:
        gpath.write_text(text, encoding="utf-8")


# ------------------------------------------------------------------ the grid

def run_grid(grid: Grid | str | Path, out: str | Path, *, clean_first: bool = False, show_progress: bool = True,
             post: bool = True, plots: bool = True, console=None) -> GridResult:
    """Run (or resume) every run of the grid; afterwards write stats, report and plots."""
    if not isinstance(grid, Grid):
        grid = load_grid(grid)
    out = Path(out)
    if clean_first and out.exists():
        clean(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "prep").mkdir(parents=True, exist_ok=True)
    _claim_grid(out, grid)
    for tmp in (out / "runs").glob(".*.tmp"):       # half-written runs of an interrupted call
        shutil.rmtree(tmp, ignore_errors=True)
    started = time.perf_counter()
    todo, done_before = [], 0
    for run in grid.runs:
        state = run_state(out / "runs" / run["run_id"])
        if state == "done":
            done_before += 1
        else:
            todo.append(run)
    ok = failed = 0
    failures: list[tuple[str, str]] = []
    by_prep: dict[str, list[dict]] = {}
    for run in todo:
        by_prep.setdefault(run["prep_key"], []).append(run)
    with _progress(show_progress, len(grid.runs), done_before, console) as tick:
        for runs in by_prep.values():
            runs.sort(key=lambda r: (r["seed"], r["n_records"] or 0, r["n_users"] or 0, r["B"]))
            try:
                prep = Prep.open(out / "prep", runs[0])
            except Exception as exc:  # the prep failure fails its runs, not the grid
                err = _error_record(exc)
                for run in runs:
                    _write_failure(out / "runs", run, err, stage="prepare")
                    failed += 1
                    failures.append((run["run_id"], err["message"]))
                    tick(False)
                continue
            try:
                for run in runs:
                    good, message = execute_run(prep, run, out / "runs")
                    ok += good
                    failed += not good
                    if not good:
                        failures.append((run["run_id"], message))
                    tick(good)
            finally:
                prep.close()
    result = GridResult(out, len(grid.runs), done_before, ok, failed, round(time.perf_counter() - started, 2),
                        failures)
    if post:
        postprocess(grid, out, plots=plots)
    return result


def postprocess(grid: Grid, out: Path, *, plots: bool = True) -> None:
    """Dataset statistics, grouped tables and (with the plots extra) plots from the finished runs."""
    from dpspin_sql.experiment import plots as plots_mod
    from dpspin_sql.experiment import report, stats

    stats.write_all(grid, out)
    tables = report.write_report(out)
    if plots:
        plots_mod.write_all(out, tables)


@contextlib.contextmanager
def _progress(show: bool, total: int, done_before: int, console):
    counts = {"done": done_before, "failed": 0}
    if not show:
        yield lambda good: counts.__setitem__("done" if good else "failed", counts["done" if good else "failed"] + 1)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    def label():
        rest = total - counts["done"] - counts["failed"]
        return f"runs: {counts['done']} done, {counts['failed']} failed, {rest} remaining"

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as bar:
        task = bar.add_task(label(), total=total, completed=done_before)

        def tick(good: bool):
            counts["done" if good else "failed"] += 1
            bar.update(task, advance=1, description=label())

        yield tick


# ------------------------------------------------------------------ preparation

class Prep:
    """A prepared store: records split, dictionary built on aux, target assigned."""

    def __init__(self, path: Path, manifest: dict):
        from dpspin_sql import store

        self.path = path
        self.manifest = manifest
        self.con = store.connect(path)
        self._mech_cache: dict = {}
        from dpspin_sql.atoms import current_atoms, current_dictionary_id

        self.atoms = current_atoms(self.con)
        self.dictionary_id = current_dictionary_id(self.con)
        self.truth_keys = manifest.get("truth_keys")
        self._public: dict = {}

    def public(self, run: dict):
        """The baselines' public vocabularies and features, fitted on aux once per setting."""
        from dpspin_sql.experiment import baselines

        key = json.dumps({k: run.get(k) for k in ("keyword_vocab_size", "keyword_vocabulary", "category_field",
                                                  "category_vocab_size", "category_exclude", "urania_dim",
                                                  "urania_clusters", "split_seed")}, sort_keys=True, default=str)
        if key not in self._public:
            self._public[key] = baselines.fit_public(self.con, run)
        return self._public[key]

    def close(self) -> None:
        self.con.close()

    @classmethod
    def open(cls, prep_dir: Path, run: dict) -> Prep:
        path = prep_dir / f"{run['prep_key']}.duckdb"
        mpath = prep_dir / f"{run['prep_key']}.json"
        if not (path.exists() and mpath.exists()):
            manifest = prepare(run, path)
            mpath.write_text(json.dumps(manifest, indent=1, default=str), encoding="utf-8")
        return cls(path, json.loads(mpath.read_text(encoding="utf-8")))

    def mechanism(self, request):
        """One calibration per distinct request (a grid cell's seeds share it)."""
        from dpspin_sql.mechanisms import make_mechanism

        key = (json.dumps(request.public_params(), sort_keys=True, default=str), len(self.atoms))
        if key not in self._mech_cache:
            self._mech_cache[key] = make_mechanism(request, len(self.atoms))
        return self._mech_cache[key]


def prepare(run: dict, path: Path) -> dict:
    """load → split (seeded hash, user-disjoint at user level) → atoms on aux → assign."""
    from dpspin_sql import assign, atoms, builders, presets, split, store

    started = time.perf_counter()
    tmp = path.with_name(path.name + ".building")
    for p in (tmp, Path(str(tmp) + ".wal"), path, Path(str(path) + ".wal")):
        if p.exists():
            p.unlink()
    con = store.connect(tmp, create=True)
    try:
        opts = {"businesses": run["businesses"]} if run.get("businesses") else {}
        loaded = presets.load_preset(con, run["preset"], run["input"], **opts)
        rep = split.split(con, run["unit"], float(run["aux_fraction"]), int(run["split_seed"]))
        if run["builder"] == "metadata":
            _, manifest = builders.build(con, "metadata", fields=list(run["fields"]), m=run["m"] or 10_000,
                                      min_support=int(run.get("min_support") or 1))
        else:
            _, manifest = builders.build(con, "phrases", profile=run.get("profile"), m=run["m"],
                                      min_support=run.get("min_support"))
        if run.get("probe"):
            from dpspin_sql.experiment import probe

            manifest = probe.install_probe_atom(con, run["probe"], manifest)
        if run["m"] is not None and manifest["m"] < run["L"]:
            raise BadInput(f"the dictionary has only m={manifest['m']} atoms, fewer than L={run['L']}")
        arep = assign.assign(con, run["scorer"], K=int(run["K"]), renormalise=bool(run.get("renormalise", True)),
                             calibrate=bool(run.get("calibrate", True)))
        truth_keys = None
        if run.get("truth_fields") and run["builder"] == "metadata" and run["truth_fields"] == run["fields"]:
            by_label = {e["label"]: e["values"] for e in manifest.get("atoms", [])}
            truth_keys = [by_label.get(a.label) for a in atoms.current_atoms(con)]
        out = {"prep_key": run["prep_key"], "dataset": run["dataset"], "preset": run["preset"],
               "input": run["input"], "unit": run["unit"], "records_loaded": loaded, "split": rep.as_dict(),
               "dictionary": manifest.get("dictionary"), "m": manifest.get("m"),
               "m_requested": run["m"], "builder": run["builder"], "atoms_manifest": manifest,
               "assign": arep.as_dict(), "truth_fields": run.get("truth_fields") if truth_keys else None,
               "truth_keys": truth_keys, "seconds": round(time.perf_counter() - started, 2)}
    finally:
        con.close()
    tmp.rename(path)
    wal = Path(str(tmp) + ".wal")
    if wal.exists():
        wal.rename(Path(str(path) + ".wal"))
    return out


# ------------------------------------------------------------------ one run

def execute_run(prep: Prep, run: dict, runs_dir: Path) -> tuple[bool, str]:
    """Run one configuration; never raises (a failure is recorded in error.json)."""
    final = runs_dir / run["run_id"]
    tmp = runs_dir / f".{run['run_id']}.tmp"
    for p in (tmp, final):
        if p.exists():
            shutil.rmtree(p)
    tmp.mkdir(parents=True)
    started = time.perf_counter()
    try:
        config, metrics = _run(prep, run, tmp)
        metrics["seconds"] = round(time.perf_counter() - started, 3)
        config["seconds"] = metrics["seconds"]
        _dump_yaml(tmp / "config.yaml", config)
        (tmp / "metrics.json").write_text(json.dumps(metrics, indent=1, default=_json_default) + "\n",
                                          encoding="utf-8")
        tmp.rename(final)
        return True, ""
    except Exception as exc:  # a failed run is recorded and the grid goes on
        err = _error_record(exc)
        _cleanup_probe(prep, run)
        shutil.rmtree(tmp, ignore_errors=True)
        _write_failure(runs_dir, run, err, stage="run")
        return False, err["message"]


def _run(prep: Prep, run: dict, out: Path) -> tuple[dict, dict]:
    from dpspin_sql import ledger, split
    from dpspin_sql.decode import summarize, write_summary
    from dpspin_sql.experiment.grid import request_of
    from dpspin_sql.mechanisms import NoisyRelease
    from dpspin_sql.plan import make_plan
    from dpspin_sql.sketch import compute_sketch
    from dpspin_sql.verify import verify

    con = prep.con
    n = run["n_records"] if run["unit"] == "record" else run["n_users"]
    rep = split.sample(con, run["unit"], int(n), int(run["seed"]),
                       strict_sample_size=bool(run["strict_sample_size"]))
    probe_info = None
    if run.get("probe"):
        from dpspin_sql.experiment import probe

        probe_info = probe.insert_probe_records(con, run["probe"], int(run["K"]))
    try:
        n_rec, n_usr = con.execute(queries.load("experiment_target_counts")).fetchall()[0]
        if run.get("method", "dpspin") != "dpspin":
            return _run_baseline(prep, run, out, rep, n_rec, n_usr)
        request = request_of(run)
        sk = compute_sketch(con, request.unit, request.K, request.B)
        # a store's sketch counts its target split (the counts are None only for a file source)
        assert sk.n_records is not None and sk.n_users is not None
        truth = _truth_vector(con, prep) if prep.truth_keys else None
    finally:
        if probe_info is not None:
            from dpspin_sql.experiment import probe

            probe.remove_probe_records(con)
    C = sk.as_float()
    atoms = prep.atoms
    m = len(atoms)
    L = request.L
    mech = prep.mechanism(request)
    eps_cost, delta_cost = mech.cost
    ledger_dataset = f"{run['run_id']}#{uuid.uuid4().hex[:8]}"
    ledger.set_budget(con, eps_cost, delta_cost, ledger_dataset, experiment_run=True)
    plan, full_noisy = release_capturing(prep, request, sk, ledger_dataset, out / "private_plan.json")

    dictionary = [{"atom_id": a.atom_id, "label": a.label} for a in atoms]
    result = summarize(plan, decoder=run["decoder"], max_attempts=int(run["max_attempts"]), dictionary=dictionary)
    write_summary(result, out / "summary.txt", out / "verifier_attempts.json")

    # the non-private top-L plan and its summary (same decoder) — reference for text metrics
    s_star = M.top_l(C, L)
    ref_plan = make_plan(NoisyRelease(admitted=s_star, noisy_mass=[float(C[j]) for j in s_star]), mech, atoms,
                         prep.dictionary_id or "")
    ref = summarize(ref_plan, decoder=run["decoder"], max_attempts=int(run["max_attempts"]), dictionary=dictionary)

    pos = {a.atom_id: i for i, a in enumerate(atoms)}
    admitted = [pos[a.atom_id] for a in plan.atoms]
    noisy = [a.noisy_mass for a in plan.atoms]
    met: dict = {"run_id": run["run_id"], "status": "ok"}
    met.update(M.plan_metrics(C, admitted, L))
    met["boundary_gap"] = M.boundary_gap(C, L)
    met["sketch_mass"] = float(np.sum(C))    # ‖C‖₁: how much of each unit's mass the assignment spends
    met["noise_scale"] = plan.noise_scale
    if full_noisy is not None:
        met.update(M.full_errors(C, full_noisy))
    else:
        met.update({"full_err_linf": None, "full_err_l1": None, "full_err_l2": None})
    met.update(M.selected_errors(C, admitted, noisy))
    final_verdict = verify(result.text, plan, dictionary)
    used = sum(1 for a in result.attempts if a.get("attempt") != "fallback")
    met.update(M.verifier_metrics(result.text, [v.to_dict() for v in final_verdict.violations],
                                  [a.label for a in plan.atoms], accepted=result.accepted,
                                  attempts_used=used, fallback_used=result.fallback_used))
    met.update(M.text_metrics(result.text, ref.text))
    met.update(_judge(run, result.text, plan, out))
    met.update(_coverage(prep, C, truth, L, [a.label for a in plan.atoms]))
    met["released_labels"] = len(plan.atoms)
    met["released_words"] = len(M.content_word_set(a.label for a in plan.atoms))
    if truth is not None:
        met.update(M.plan_metrics(truth, admitted, L, prefix="truth_"))
        met["np_truth_overlap_at_L"] = M.plan_metrics(truth, s_star, L)["overlap_at_L"]
        met["truth_records_in_dictionary"] = float(np.sum(truth))
    if probe_info is not None:
        p = pos[probe_info["atom_id"]]
        met["probe_support"] = int(run["probe"]["support"])
        met["probe_admitted"] = 1.0 if p in admitted else 0.0
        met["probe_mentioned"] = 1.0 if M.mentions_label(result.text, probe_info["label"]) else 0.0
        met["probe_np_rank"] = M.nonprivate_rank(C, p)
        met["probe_np_mass"] = float(C[p])
        met["probe_records_assigned"] = probe_info["assigned_to_probe"]
    met["n_records_effective"] = int(sk.n_records)
    met["n_users_effective"] = int(sk.n_users) if run["unit"] == "user" else int(n_usr)

    cfg = dict(run)
    cfg.update({
        "data_dir": str(Path(run["input"]).parent.parent),
        "n_records_effective": int(sk.n_records),
        "n_users_effective": int(sk.n_users) if run["unit"] == "user" else int(n_usr),
        "sampled_units": rep.sampled_units,
        "target_records_with_user_id": int(n_rec) if n_usr else 0,
        "m_effective": m,
        "dictionary": prep.dictionary_id,
        "prep_store": str(prep.path),
        "ledger_dataset": ledger_dataset,
        "release_id": plan.release_id,
        "privacy_cost": {"epsilon": eps_cost, "delta": delta_cost},
        "noise_scale": plan.noise_scale,
        "noise_source": plan.noise_source,
        "probe_records": probe_info["inserted"] if probe_info else None,
    })
    return cfg, met


def _judge(run: dict, summary: str, plan, out: Path) -> dict:
    """The optional release-conditioned judge (judge.py): it sees the released object only."""
    if not run.get("judge_base_url"):
        return {}
    from dpspin_sql.experiment import judge

    rec = judge.judge(summary, plan, judge.JudgeConfig(base_url=run["judge_base_url"], model=run.get("judge_model")))
    (out / "judge.json").write_text(json.dumps(rec, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return judge.metrics(rec)


def _coverage(prep: Prep, C, truth, L: int, released: list[str]) -> dict:
    """Theme coverage of the released labels: of the non-private DP-SPIN top-L themes and,
    for CFPB, of the true top-L Product / Issue / Sub-issue themes (metrics.theme_coverage)."""
    s_star = M.top_l(C, L)
    out = M.theme_coverage([prep.atoms[j].label for j in s_star], released, prefix="np_theme_")
    if truth is not None:
        assert prep.truth_keys is not None  # the truth vector is counted over them
        top = [j for j in M.top_l(truth, L) if truth[j] > 0]
        fields = [[v for v in (prep.truth_keys[j] or []) if v] for j in top]
        out.update(M.theme_coverage([prep.atoms[j].label for j in top], released, fields, prefix="truth_theme_"))
    return out


def _run_baseline(prep: Prep, run: dict, out: Path, rep, n_rec, n_usr) -> tuple[dict, dict]:
    """A DP baseline or a non-private reference on the same sample as the DP-SPIN runs
    (docs/EXPERIMENTS.md "Baselines"); the DP ones are charged like a DP-SPIN release."""
    from dpspin_sql.decode import summarize, write_summary
    from dpspin_sql.experiment import baselines
    from dpspin_sql.experiment.grid import REFERENCES, request_of
    from dpspin_sql.mechanisms import NoisyRelease
    from dpspin_sql.plan import make_plan
    from dpspin_sql.request import Bounds
    from dpspin_sql.sketch import run_sketch
    from dpspin_sql.verify import verify

    con = prep.con
    method = run["method"]
    L = int(run["L"])
    bounds = Bounds(run["unit"], int(run["K"]), run["B"] if run["unit"] == "user" else None)
    sk = run_sketch(con, bounds)
    # a store's sketch counts its target split (the counts are None only for a file source)
    assert sk.n_records is not None and sk.n_users is not None
    C = sk.as_float()
    truth = _truth_vector(con, prep) if prep.truth_keys else None
    atoms = prep.atoms
    s_star = M.top_l(C, L)
    reference = method in REFERENCES
    # the text reference: the non-private DP-SPIN top-L plan, verbalized with the same public
    # metadata as the DP-SPIN run at this mechanism and ε (for a reference row: the exact plan itself)
    if reference:
        ref_plan = baselines.nonprivate_plan(atoms, s_star, [float(C[j]) for j in s_star], run, len(atoms))
    else:
        mech = prep.mechanism(request_of(run))
        ref_plan = make_plan(NoisyRelease(admitted=s_star, noisy_mass=[float(C[j]) for j in s_star]), mech, atoms,
                             prep.dictionary_id or "")
    ref = summarize(ref_plan, decoder=run["decoder"], max_attempts=int(run["max_attempts"]))
    ledger_dataset = None if reference else f"{run['run_id']}#{uuid.uuid4().hex[:8]}"
    ctx = baselines.Context(con, atoms, prep.dictionary_id or "", C, s_star, truth, None, None, ref.text,
                            ledger_dataset)
    pub = prep.public(run)
    plan_dict, met0, plan = baselines.run_method(ctx, run, out, pub)
    dictionary = [{"atom_id": a["atom_id"], "label": a["label"]} for a in plan_dict["atoms"]]
    if method in ("keyword_hist", "category_hist"):
        side = json.loads((out / ("private_plan.dictionary.json")).read_text(encoding="utf-8"))
        dictionary = [{"atom_id": a["atom_id"], "label": a["label"]} for a in side["atoms"]]
    result = summarize(plan, decoder=run["decoder"], max_attempts=int(run["max_attempts"]), dictionary=dictionary)
    write_summary(result, out / "summary.txt", out / "verifier_attempts.json")
    released = [a.label for a in plan.atoms]
    met: dict = {"run_id": run["run_id"], "status": "ok", "method": method, "non_private": reference}
    met.update(met0)
    final_verdict = verify(result.text, plan, dictionary)
    used = sum(1 for a in result.attempts if a.get("attempt") != "fallback")
    met.update(M.verifier_metrics(result.text, [v.to_dict() for v in final_verdict.violations], released,
                                  accepted=result.accepted, attempts_used=used, fallback_used=result.fallback_used))
    met.update(M.text_metrics(result.text, ref.text))
    met.update(_judge(run, result.text, plan, out))
    met.update(_coverage(prep, C, truth, L, released))
    if method == "np_plan":
        met.update(M.plan_metrics(C, s_star, L))
    met["released_labels"] = len(released)
    met["released_words"] = len(M.content_word_set(released))
    met["n_records_effective"] = int(sk.n_records)
    met["n_users_effective"] = int(sk.n_users) if run["unit"] == "user" else int(n_usr)
    cost = plan_dict.get("privacy_cost") or {}
    cfg = dict(run)
    cfg.update({
        "data_dir": str(Path(run["input"]).parent.parent),
        "n_records_effective": int(sk.n_records),
        "n_users_effective": met["n_users_effective"],
        "sampled_units": rep.sampled_units,
        "target_records_with_user_id": int(n_rec) if n_usr else 0,
        "m_effective": int(plan_dict.get("m") or len(atoms)),
        "dictionary": plan_dict.get("dictionary"),
        "prep_store": str(prep.path),
        "ledger_dataset": ledger_dataset,
        "release_id": plan_dict.get("release_id"),
        "privacy_cost": None if reference else {"epsilon": cost.get("epsilon"), "delta": cost.get("delta")},
        "non_private": reference,
        "noise_scale": plan_dict.get("noise_scale"),
        "noise_source": plan_dict.get("noise_source"),
        "probe_records": None,
    })
    return cfg, met


def release_capturing(prep: Prep, request, sketch, dataset: str, out_path: Path):
    """`release.release` on the run's sketch, keeping the full noisy vector of a full-sketch
    release for the value-error metrics (docs/EXPERIMENTS.md). The vector never reaches the
    plan: the mechanism hands it to `observe` inside the curator. Returns (plan, vector | None).
    """
    from dpspin_sql.release import release
    from dpspin_sql.sketch.engines.given import GivenSketch

    captured: dict = {}
    plan = release(prep.con, request, GivenSketch(sketch, name="experiment"), out=out_path, dataset=dataset,
                   mechanism=prep.mechanism(request), observe=lambda v: captured.__setitem__("noisy", v))
    noisy = captured.get("noisy")
    if noisy is not None and len(noisy) != len(prep.atoms):
        noisy = None
    return plan, noisy


def _truth_vector(con, prep: Prep) -> np.ndarray:
    """True label counts of the target split per atom (CFPB: Product / Issue / Sub-issue)."""
    fields = prep.manifest["truth_fields"]
    assert prep.truth_keys is not None  # callers ask only when the manifest has truth keys
    rows = con.execute(queries.load("experiment_truth_counts"), {"fields": fields}).fetchall()
    counts = {tuple(k): c for k, c in rows}
    return np.array([float(counts.get(tuple(k), 0)) if k is not None else 0.0 for k in prep.truth_keys])


def _cleanup_probe(prep: Prep, run: dict) -> None:
    if run.get("probe"):
        with contextlib.suppress(Exception):
            from dpspin_sql.experiment import probe

            probe.remove_probe_records(prep.con)


def _error_record(exc: BaseException) -> dict:
    return {"status": "failed", "type": type(exc).__name__, "message": str(exc).strip().splitlines()[0]
            if str(exc).strip() else type(exc).__name__, "traceback": traceback.format_exc()}


def _write_failure(runs_dir: Path, run: dict, err: dict, stage: str) -> None:
    final = runs_dir / run["run_id"]
    if final.exists():
        shutil.rmtree(final)
    final.mkdir(parents=True)
    _dump_yaml(final / "config.yaml", dict(run))
    (final / "error.json").write_text(json.dumps({"run_id": run["run_id"], "stage": stage, **err}, indent=1)
                                      + "\n", encoding="utf-8")


def _dump_yaml(path: Path, data: dict) -> None:
    path.write_text(yaml.safe_dump(json.loads(json.dumps(data, default=_json_default)), sort_keys=False,
                                   allow_unicode=True), encoding="utf-8")


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


Tick = Callable[[bool], None]
