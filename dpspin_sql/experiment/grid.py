"""Grid files → final per-run configurations, built from per-dataset default templates.

A grid YAML names datasets (presets) and the values to sweep; everything it does not
say comes from the dataset's template below, then from `COMMON`. Expansion order:

    template(dataset) ← grid `defaults:` ← grid `datasets: {name: …}`

and then the product over unit × sample size × m × K × L × mechanism × ε × δ × B × seed.
B is swept at user level only (record level is B = 1); δ is 0 for laplace (its runs are
not repeated per δ). Sample sizes: `n_records` at record level, `n_users` at user level.

    name: smoke
    data_dir: ../shared/data            # optional; else $DPSPIN_DATA, else ../shared/data
    defaults: {epsilon: [0.5, 1, 4], seeds: 2}
    datasets:
      cfpb: {n_records: [1000], m: [50]}
    probe: {...}                        # optional, see probe.py
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from dpspin_sql import mechanism_kinds, names
from dpspin_sql.errors import BadInput
from dpspin_sql.experiment.probe import DEFAULT_PROBE, PROBE_SWEPT

REPO_ROOT = Path(__file__).resolve().parents[2]
MECHANISMS = mechanism_kinds.NAMES   # the grid's default sweep

# Values shared by every dataset (the paper's main configuration, docs/DESIGN.md §9).
COMMON: dict = {
    "units": ["record"],
    "n_records": [1000],
    "n_users": [500],
    "m": [50],
    "K": [3],
    "L": [10],
    "mechanism": list(MECHANISMS),
    "epsilon": [0.1, 0.5, 1.0, 4.0, 10.0],
    "delta": [1e-6],
    "B": [1.0, 2.0],
    "seeds": 5,
    "adjacency": "add_drop",
    "selection_fraction": 0.5,
    "calibration": "zcdp",
    "public_denominator": None,
    "aux_fraction": 0.5,
    "split_seed": 0,
    "scorer": "similarity",
    "renormalise": True,          # each record's kept top-K scores scaled to sum 1 (False: the old raw scores)
    "calibrate": True,            # mass only to atoms a record reaches the aux-calibrated threshold of (False: old top-K rule)
    "strict_sample_size": True,
    "decoder": "template",
    "max_attempts": 3,
    # what runs: DP-SPIN itself, the DP baselines and the non-private references (baselines.py)
    "method": ["dpspin"],
    "baseline_mechanisms": ["laplace", "gaussian"],
    "keyword_vocab_size": 100,          # keyword baselines: top aux words by document frequency
    "keyword_vocabulary": None,         # ... or a file of keywords, one a line
    "category_field": None,             # category baseline: one public metadata field (template)
    "category_vocab_size": 50,
    "category_exclude": [],
    "urania_clusters": 10,
    "urania_iterations": 3,
    "urania_dim": 16,
    "urania_split": {"clustering": 0.4, "sizes": 0.2, "histograms": 0.4},
    "urania_min_size": 5.0,
    "urania_keywords": 3,
    "judge_base_url": None,             # release-conditioned LLM judge (judge.py); off when unset
    "judge_model": None,
}

# Per-dataset default templates (paper §8 / appendices D–F, scaled to the shared samples).
TEMPLATES: dict[str, dict] = {
    "cfpb": {
        "preset": "cfpb",
        "input": "cfpb_complaints/complaints.jsonl.gz",
        "builder": "metadata",
        "fields": ["product", "issue", "sub_issue"],
        "min_support": 1,
        "units": ["record"],           # no stable user id: record level only
        "n_records": [2000],
        "m": [50],
        "truth_fields": ["product", "issue", "sub_issue"],   # ground-truth labels of the atoms
        "category_field": "issue",
    },
    "amazon": {
        "preset": "amazon",
        "input": "amazon_all_beauty_2023/reviews.jsonl.gz",
        "builder": "phrases",
        "profile": "beauty",
        # The paper's threshold 25 on ~700k reviews gives m=46; on this ~5k-review sample it
        # leaves 8–14 phrases, so the threshold is scaled to 8 and m capped at the paper's 46.
        "min_support": 8,
        "units": ["record", "user"],
        "n_records": [1000],
        "n_users": [500],
        "m": [46],
        "category_field": "rating",       # the only public categorical field of the reviews: 1-5 stars
    },
    "yelp": {
        "preset": "yelp",
        "input": "yelp_phoenix_2013/reviews.jsonl.gz",
        "builder": "phrases",
        "profile": "restaurants",
        "min_support": 10,
        "units": ["record", "user"],
        "n_records": [1000],
        "n_users": [1000],
        "m": [50],
        "category_field": "categories",   # the business's categories, one per record (baselines.py)
        "category_exclude": ["Restaurants", "Food", "Nightlife"],
    },
}

SWEPT = ("units", "n_records", "n_users", "m", "K", "L", "mechanism", "epsilon", "delta", "B", "method")
BASELINE_SCALARS = ("baseline_mechanisms", "keyword_vocab_size", "keyword_vocabulary", "category_field",
                    "category_vocab_size", "category_exclude", "urania_clusters", "urania_iterations", "urania_dim",
                    "urania_split", "urania_min_size", "urania_keywords", "judge_base_url", "judge_model")
SCALARS = ("preset", "input", "businesses", "builder", "fields", "profile", "min_support", "truth_fields",
           "adjacency", "selection_fraction", "calibration", "public_denominator", "aux_fraction",
           "split_seed", "scorer", "renormalise", "calibrate", "strict_sample_size", "decoder", "max_attempts",
           "seeds") + BASELINE_SCALARS
METHODS = ("dpspin", "keyword_hist", "category_hist", "urania", "np_plan", "np_kmeans")
DP_BASELINES = ("keyword_hist", "category_hist", "urania")
REFERENCES = ("np_plan", "np_kmeans")   # non-private: never charged, never published as DP
PREP_KEYS = ("preset", "input", "businesses", "builder", "fields", "profile", "min_support", "m",
             "aux_fraction", "split_seed", "unit", "scorer", "renormalise", "calibrate", "K", "probe")


@dataclass
class Grid:
    name: str
    path: Path | None
    data_dir: Path
    runs: list[dict]
    probe: dict | None = None
    raw: dict = field(default_factory=dict)


def data_dir(raw: dict, grid_path: Path | None = None) -> Path:
    """`data_dir:` in the grid (relative to the repo root), else $DPSPIN_DATA, else ../shared/data."""
    value = raw.get("data_dir") or os.environ.get("DPSPIN_DATA")
    if not value:
        return REPO_ROOT.parent / "shared" / "data"
    p = Path(os.path.expanduser(str(value)))
    return p if p.is_absolute() else (REPO_ROOT / p).resolve()


def load_grid(path: str | Path) -> Grid:
    path = Path(path)
    if not path.exists():
        raise BadInput(f"grid file not found: {path}")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise BadInput(f"cannot parse {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(raw, dict):
        raise BadInput(f"{path} must be a mapping with a 'datasets' entry")
    return expand(raw, path)


GRID_TOP = ("name", "data_dir", "defaults", "datasets", "probe", "description")


def expand(raw: dict, path: Path | None = None) -> Grid:
    """Expand a parsed grid into the list of final per-run configurations."""
    unknown = set(raw) - set(GRID_TOP)
    if unknown:
        raise BadInput(f"unknown grid key(s): {', '.join(sorted(unknown))}"
                       + names.suggestion(min(unknown), GRID_TOP, where="grid"))
    name = str(raw.get("name") or (path.stem if path else "grid"))
    ddir = data_dir(raw, path)
    defaults = raw.get("defaults") or {}
    datasets = raw.get("datasets") or {}
    if isinstance(datasets, list):
        datasets = {d: {} for d in datasets}
    if not isinstance(datasets, dict):
        raise BadInput("'datasets' must map dataset names to their settings")
    runs: list[dict] = []
    for ds_name, overrides in datasets.items():
        runs.extend(expand_dataset(str(ds_name), defaults, overrides or {}, ddir, name))
    probe = None
    if raw.get("probe"):
        probe_cfg = raw["probe"]
        probe_ds = str(probe_cfg.get("dataset", "cfpb"))
        base = dataset_settings(probe_ds, defaults, datasets.get(probe_ds) or {}, ddir)
        probe = probe_cfg
        runs.extend(expand_probe(probe_cfg, base, name))
    ids = [r["run_id"] for r in runs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise BadInput(f"the grid expands to the same run twice: {dup}")
    return Grid(name, path, ddir, runs, probe, raw)


def dataset_settings(ds_name: str, defaults: dict, overrides: dict, ddir: Path) -> dict:
    preset = overrides.get("preset") or defaults.get("preset") or ds_name
    if preset not in TEMPLATES:
        raise BadInput(f"unknown dataset {ds_name!r}: the templates are {', '.join(TEMPLATES)} "
                       "(set 'preset:' to one of them)")
    cfg = copy.deepcopy(COMMON)
    cfg.update(copy.deepcopy(TEMPLATES[preset]))
    for layer in (defaults, overrides):
        bad = set(layer) - set(SWEPT) - set(SCALARS) - {"preset", "unit", "n_seeds"}
        if bad:
            raise BadInput(f"unknown setting(s) for {ds_name}: {', '.join(sorted(bad))}"
                           + names.suggestion(min(bad), (*SWEPT, *SCALARS, "preset", "unit", "n_seeds"), where="grid"))
        cfg.update(copy.deepcopy(layer))
    if "unit" in cfg:
        cfg["units"] = cfg.pop("unit")
    cfg["dataset"] = ds_name
    cfg["input"] = str(_resolve(cfg["input"], ddir))
    prof = cfg.get("profile")
    if isinstance(prof, str) and prof.endswith((".yaml", ".yml")) and not Path(prof).is_absolute():
        cfg["profile"] = str((REPO_ROOT / prof).resolve())    # a profile file: relative to the repo root
    if not isinstance(cfg.get("renormalise"), bool):
        raise BadInput(f"renormalise must be true or false for {ds_name}, not {cfg.get('renormalise')!r}")
    if cfg.get("businesses"):
        cfg["businesses"] = str(_resolve(cfg["businesses"], ddir))
    return cfg


def expand_dataset(ds_name: str, defaults: dict, overrides: dict, ddir: Path, grid_name: str) -> list[dict]:
    cfg = dataset_settings(ds_name, defaults, overrides, ddir)
    seeds = seed_list(cfg["seeds"])
    runs = []
    seen = set()
    for unit in _list(cfg["units"]):
        if unit not in ("record", "user"):
            raise BadInput(f"unit must be record or user, not {unit!r}")
        sizes = _list(cfg["n_records"] if unit == "record" else cfg["n_users"])
        Bs = _list(cfg["B"]) if unit == "user" else [1.0]
        for method in _list(cfg["method"]):
            if method not in METHODS:
                raise BadInput(f"unknown method {method!r} for {ds_name}: use {', '.join(METHODS)}")
            if method in REFERENCES:       # non-private: no mechanism, no ε
                mechs, epsilons, deltas = ["none"], [math.inf], [0.0]
            elif method == "dpspin":
                mechs, epsilons, deltas = _list(cfg["mechanism"]), _list(cfg["epsilon"]), _list(cfg["delta"])
            else:
                mechs = [x for x in _list(cfg["mechanism"]) if x in _list(cfg["baseline_mechanisms"])]
                epsilons, deltas = _list(cfg["epsilon"]), _list(cfg["delta"])
            for n, m, K, L, mech, eps, delta, B, seed in itertools.product(
                    sizes, _list(cfg["m"]), _list(cfg["K"]), _list(cfg["L"]), mechs, epsilons, deltas, Bs, seeds):
                run = run_config(cfg, grid_name, unit=unit, n=n, m=m, K=K, L=L, mechanism=mech, epsilon=eps,
                                 delta=delta, B=B, seed=seed, method=method)
                if run["run_id"] in seen:      # laplace (and the references) repeated per δ
                    continue
                seen.add(run["run_id"])
                runs.append(run)
    return runs


def run_config(cfg: dict, grid_name: str, *, unit, n, m, K, L, mechanism, epsilon, delta, B, seed,
               probe: dict | None = None, method: str = "dpspin") -> dict:
    run = {k: copy.deepcopy(cfg.get(k)) for k in SCALARS if k != "seeds"}
    reference = method in REFERENCES
    run.update({
        "grid": grid_name, "dataset": cfg["dataset"], "unit": unit, "method": method,
        "n_records": int(n) if unit == "record" else None,
        "n_users": int(n) if unit == "user" else None,
        "m": None if m in (None, "all") else int(m),
        "K": int(K), "L": int(L), "mechanism": mechanism, "epsilon": float(epsilon),
        "delta": 0.0 if mechanism in ("laplace", "none") else float(delta),
        "B": float(B) if unit == "user" else 1.0,
        "seed": int(seed),
        "probe": probe,
    })
    run["prep_key"] = prep_key(run)
    run["run_id"] = run_id(run)
    if not reference:
        request_of(run)   # a bad grid value fails at expansion, before any run starts
    if method != "dpspin":
        from dpspin_sql.experiment.baselines import check_settings

        check_settings(run)
    return run


# ReleaseRequest field -> the grid key that sets it
GRID_KEYS = {n.field: n.grid[0] for n in names.TABLE if n.grid}   # dpspin_sql.names


def request_of(run: dict):
    """The release request of one run (a bad value names the grid key that set it)."""
    from dpspin_sql.request import ReleaseRequest, RequestError

    mechanism = run["mechanism"]
    try:
        return ReleaseRequest(
            mechanism=mechanism, epsilon=run["epsilon"], delta=run["delta"] if mechanism != "laplace" else None,
            unit=run["unit"], adjacency=run["adjacency"], B=run["B"] if run["unit"] == "user" else None,
            K=run["K"], L=run["L"],
            selection_fraction=run["selection_fraction"] if mechanism_kinds.selects_privately(mechanism) else None,
            calibration=run["calibration"] if mechanism != "laplace" else None,
            public_denominator=run.get("public_denominator"))
    except RequestError as exc:
        raise BadInput(f"grid {run['grid']}, dataset {run['dataset']}: {exc.named(GRID_KEYS.get(exc.field, exc.field))}"
                       ) from None


def run_id(run: dict) -> str:
    n = f"n{run['n_records']}" if run["unit"] == "record" else f"u{run['n_users']}"
    m = "mall" if run["m"] is None else f"m{run['m']}"
    parts = [run["dataset"], run["unit"], n, m, f"K{run['K']}", f"L{run['L']}", f"B{run['B']:g}"]
    method = run.get("method", "dpspin")
    if method in REFERENCES:
        parts.append(method)
    else:
        if method != "dpspin":
            parts.append(method)
        parts += [run["mechanism"], f"eps{run['epsilon']:g}", f"d{run['delta']:g}"]
    if run.get("probe"):
        parts.append(f"probe{run['probe']['support']}")
    parts.append(f"s{run['seed']}")
    return "-".join(parts)


def prep_key(run: dict) -> str:
    """Everything the expensive preparation (load → split → atoms → assign) depends on."""
    key = {k: run.get(k) for k in PREP_KEYS}
    if probe := key.get("probe"):
        key["probe"] = {k: v for k, v in probe.items() if k != "support"}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return f"{run['dataset']}-{run['unit']}-{digest}"


def seed_list(seeds) -> list[int]:
    if isinstance(seeds, bool):
        raise BadInput(f"seeds must be a count or a list of integers, not {seeds!r}")
    if isinstance(seeds, int):
        if seeds < 1:
            raise BadInput("seeds must be at least 1")
        return list(range(seeds))
    out = _list(seeds)
    if not out or not all(isinstance(s, int) and not isinstance(s, bool) for s in out):
        raise BadInput(f"seeds must be a count or a list of integers, not {seeds!r}")
    return out


def _list(x) -> list:
    if x is None:
        return [None]
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _resolve(p: str | Path, ddir: Path) -> Path:
    path = Path(os.path.expanduser(str(p)))
    return path if path.is_absolute() else ddir / path


def expand_probe(spec: dict, base: dict, grid_name: str) -> list[dict]:
    unknown = set(spec) - {"dataset", "label", "description", "texts", "support", "unit", "seeds"} - set(PROBE_SWEPT)
    if unknown:
        raise BadInput(f"unknown probe setting(s): {', '.join(sorted(unknown))}")
    label = spec.get("label") or DEFAULT_PROBE["label"]
    description = spec.get("description", DEFAULT_PROBE["description"] if "label" not in spec else "")
    texts = spec.get("texts") or DEFAULT_PROBE["texts"]
    if not isinstance(texts, list) or not all(isinstance(t, str) and t.strip() for t in texts):
        raise BadInput("probe texts must be a non-empty list of strings")
    supports = _list(spec.get("support", [0, 5, 10, 20, 40, 80]))
    if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in supports):
        raise BadInput("probe support values must be non-negative integers")
    cfg = dict(base)
    for k in PROBE_SWEPT:
        if k in spec:
            cfg[k] = spec[k]
    unit = spec.get("unit", "record")
    if unit not in ("record", "user"):
        raise BadInput(f"probe unit must be record or user, not {unit!r}")
    seeds = seed_list(spec.get("seeds", 10))
    sizes = _list(cfg["n_records"] if unit == "record" else cfg["n_users"])
    Bs = _list(cfg["B"]) if unit == "user" else [1.0]
    runs, seen = [], set()
    for s, n, m, K, L, mech, eps, delta, B, seed in itertools.product(
            supports, sizes, _list(cfg["m"]), _list(cfg["K"]), _list(cfg["L"]), _list(cfg["mechanism"]),
            _list(cfg["epsilon"]), _list(cfg["delta"]), Bs, seeds):
        probe = {"label": label, "description": description, "texts": list(texts), "support": int(s)}
        run = run_config(cfg, grid_name, unit=unit, n=n, m=m, K=K, L=L, mechanism=mech, epsilon=eps, delta=delta,
                         B=B, seed=seed, probe=probe)
        if run["run_id"] not in seen:
            seen.add(run["run_id"])
            runs.append(run)
    return runs
