"""Do masses mean what their labels say? The assignment map's fidelity on real corpora,
before and after issue 22 (reports, asserts nothing).

For each corpus the README's default commands are run (load, split, atoms build, assign
with the default scorer, K=3), then the sketch's masses are compared with what the
target records say — evaluation metrics of this benchmark, read by this script alone and
never an input to any fitted map:

- phrase atoms: **share** = the share of the assigned mass that comes from records that
  mention the atom (its label, or one of its recorded variants, or either with the head
  word in the other number — matched here by this script's own regular expressions, not
  by dpspin's matcher); `share (label)` counts the label and its inflections only;
  **Spearman** = rank correlation of per-atom mass and per-atom mentioning records;
- CFPB (metadata atoms): the same share against the records' own Product / Issue /
  Sub-issue, top-1 accuracy among records whose combination is an atom (a record that
  abstains counts as a miss) and among those that gave mass;
- the paper's utility metrics of DP releases at ε = 1 (Laplace, Gaussian, private top-L;
  `--seeds` each): overlap@10 and mass_retained against the non-private sketch, and
  overlap@10 of the released top 10 with the top 10 by mentions (CFPB: true categories).

"before" runs the same commands with the code of `--before` (default: the commit before
issue 22), extracted into a temporary directory and imported in a child process; "after"
runs this checkout. Both read the same files under ../shared/data.

    nice .venv/bin/python bench/bench_fidelity.py [--datasets cfpb,amazon,yelp,amazon2018]
        [--scorers default,similarity,embedding] [--before REF | --no-before] [--seeds 3] [--split-seed 1]
        [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("DPSPIN_DATA", ROOT.parent / "shared" / "data"))
BEFORE = "a0d12b3"     # the last commit before issue 22's assignment semantics

# The README's commands per corpus (docs: README "Reviews: phrase atoms", "The pipeline").
DATASETS = {
    "cfpb": {"load": ["--input", "cfpb_complaints/complaints.jsonl.gz", "--preset", "cfpb"], "unit": "record",
             "build": ["--builder", "metadata", "--fields", "product,issue,sub_issue", "-m", "50"],
             "scorer": "supervised"},
    "amazon": {"load": ["--input", "amazon_all_beauty_2023/reviews.jsonl.gz", "--preset", "amazon"], "unit": "user",
               "build": ["--builder", "phrases", "--profile", "beauty", "--min-support", "8", "-m", "46"]},
    "yelp": {"load": ["--input", "yelp_phoenix_2013/reviews.jsonl.gz", "--preset", "yelp"], "unit": "user",
             "build": ["--builder", "phrases", "--profile", "restaurants", "-m", "50"]},
    # data the project has not tuned on: the 2018 Amazon All_Beauty 5-core reviews
    "amazon2018": {"load": ["--input", "amazon_all_beauty_2018_5core/reviews.jsonl.gz", "--user-col", "reviewerID",
                            "--text-col", "reviewText"], "unit": "user",
                   "build": ["--builder", "phrases", "--profile", "beauty", "--min-support", "8", "-m", "46"]},
}
MECHANISMS = ("laplace", "gaussian", "private_topL")


# -- this benchmark's own mention matcher (independent of dpspin_sql.mentions) ----------

def _numbers(word: str) -> set[str]:
    out = {word}
    if word.endswith("ies"):
        out.add(word[:-3] + "y")
    if word.endswith("es"):
        out.add(word[:-2])
    if word.endswith("s") and not word.endswith("ss"):
        out.add(word[:-1])
    if word.endswith("y"):
        out.add(word[:-1] + "ies")
    out |= {word + "s", word + "es"}
    return out


def mention_regex(phrases: list[str]) -> re.Pattern:
    alts = []
    for p in phrases:
        words = p.lower().split()
        head = "(?:" + "|".join(sorted(map(re.escape, _numbers(words[-1])))) + ")"
        alts.append(r"[ \t-]+".join([*map(re.escape, words[:-1]), head]))
    return re.compile(r"(?<![a-z])(?:" + "|".join(alts) + r")(?![a-z])")


def normalise(text: str | None) -> str:
    return (text or "").lower().replace("’", "'").replace("'", "")


# -- one side, one corpus (child process) ---------------------------------------------

def child(side: str, dataset: str, scorers: list[str], seeds: int, workdir: Path, out: Path,
          split_seed: int = 1) -> None:
    import numpy as np
    from scipy.stats import spearmanr

    from dpspin_sql import assign, store
    from dpspin_sql.cli import run
    from dpspin_sql.release import release
    from dpspin_sql.request import ReleaseRequest
    from dpspin_sql.sketch import compute_sketch

    spec = DATASETS[dataset]
    db = workdir / f"{dataset}.duckdb"
    load = [str(DATA / a) if a.endswith(".gz") else a for a in spec["load"]]
    steps = [["init", "--db", str(db), "--epsilon-budget", "1000", "--delta-budget", "0.01"],
             ["load", "--db", str(db), *load],
             ["split", "--db", str(db), "--unit", spec["unit"], "--aux-fraction", "0.5", "--seed", str(split_seed)],
             ["atoms", "build", "--db", str(db), *spec["build"]]]
    t0 = time.perf_counter()
    for step in steps:
        if run(step) != 0:
            raise SystemExit(f"{side} {dataset}: dpspin {' '.join(step[:2])} failed")
    build_s = time.perf_counter() - t0
    results = []
    for scorer in scorers:
        con = store.connect(db)
        if scorer == "default":   # the README's: --scorer supervised on CFPB, the CLI default elsewhere
            name = spec.get("scorer") or ("similarity" if side == "before" else "auto")
        else:
            name = scorer
        t = time.perf_counter()
        rep = assign.assign(con, name, K=3)
        assign_s = time.perf_counter() - t
        row = {"side": side, "dataset": dataset, "split_seed": split_seed,
               "scorer": scorer if scorer != "default" else f"default ({rep.scorer})",
               "m": rep.m, "n_target": rep.n_records, "abstained": round(rep.n_unassigned / max(rep.n_records, 1), 3),
               "assign_s": round(assign_s, 1), "build_s": round(build_s, 1)}
        fid = getattr(rep, "fidelity", None)
        if fid:
            row["aux_precision"], row["aux_recall"] = fid.get("precision"), fid.get("recall")
        atoms = con.execute("SELECT atom_id, label FROM atoms ORDER BY atom_id").fetchall()
        manifest = json.loads(con.execute("SELECT manifest FROM dictionary").fetchone()[0])
        target = con.execute("SELECT record_id, text, metadata FROM records WHERE split = 'target'").fetchall()
        rows = con.execute("SELECT a.record_id, a.atom_id, a.weight FROM assignment_rows a JOIN records r "
                           "USING (record_id) WHERE r.split = 'target'").fetchall()
        ids = [a for a, _ in atoms]
        col = {a: j for j, a in enumerate(ids)}
        idx = {r: i for i, (r, _, _) in enumerate(target)}
        n, m = len(target), len(ids)
        W = np.zeros((n, m))
        for r, a, w in rows:
            if a in col and r in idx and w is not None and np.isfinite(w) and w > 0:
                W[idx[r], col[a]] += min(float(w), 1.0)
        if manifest.get("builder") == "phrases":
            by_id = {e["atom_id"]: e for e in manifest["atoms"]}
            texts = [normalise(t) for _, t, _ in target]
            truth = np.zeros((n, m), dtype=bool)
            label_only = np.zeros((n, m), dtype=bool)
            for j, (a, label) in enumerate(atoms):
                variants = list(dict.fromkeys([label, *(by_id.get(a, {}).get("variants") or [])]))
                rx, rl = mention_regex(variants), mention_regex([label])
                truth[:, j] = [bool(rx.search(t)) for t in texts]
                label_only[:, j] = [bool(rl.search(t)) for t in texts]
            row["share_label"] = round(float((W * label_only).sum() / W.sum()), 3) if W.sum() else None
            order_truth = truth.sum(axis=0)
        else:
            fields = manifest["fields"]
            key = {tuple(v if v is not None else "" for v in e["values"]): e["atom_id"] for e in manifest["atoms"]}
            truth = np.zeros((n, m), dtype=bool)
            in_dict = np.zeros(n, dtype=bool)
            for i, (_, _, md) in enumerate(target):
                d = json.loads(md) if isinstance(md, str) else (md or {})
                k = tuple((str(d.get(f)).strip() if d.get(f) is not None else "") for f in fields)
                if k in key:
                    truth[i, col[key[k]]] = True
                    in_dict[i] = True
            best = np.where(W.sum(axis=1) > 0, W.argmax(axis=1), -1)
            correct = np.array([b >= 0 and truth[i, b] for i, b in enumerate(best)])
            row["top1"] = round(float(correct[in_dict].mean()), 4)
            given = in_dict & (best >= 0)
            row["top1_assigned"] = round(float(correct[given].mean()), 4) if given.any() else None
            order_truth = truth.sum(axis=0)
        mass = W.sum(axis=0)
        row["share"] = round(float((W * truth).sum() / W.sum()), 3) if W.sum() else None
        row["spearman"] = round(float(spearmanr(mass, order_truth).statistic), 3) if np.ptp(mass) and np.ptp(order_truth) else None
        row["sketch_mass"] = round(float(mass.sum()), 1)
        # the paper's utility metrics, DP releases against the non-private sketch
        unit = spec["unit"]
        sk = compute_sketch(con, unit=unit, K=3, B=1.0 if unit == "user" else None)
        true = np.asarray(sk.mass, dtype=np.float64) / float(sk.scale)
        L = min(10, m)
        top_true = set(np.argsort(-true, kind="stable")[:L].tolist())
        top_ment = set(np.argsort(-order_truth, kind="stable")[:L].tolist())
        util: dict[str, list] = {}
        for mech in MECHANISMS:
            for _ in range(seeds):
                req = ReleaseRequest(mechanism=mech, epsilon=1.0, delta=None if mech == "laplace" else 1e-6,
                                     unit=unit, B=1.0 if unit == "user" else None, K=3, L=L)
                plan = release(con, req)
                got = {col[a.atom_id] for a in plan.atoms}
                util.setdefault(f"{mech}_overlap", []).append(len(got & top_true) / L)
                best_mass = sum(true[j] for j in top_true)
                util.setdefault(f"{mech}_mass_retained", []).append(sum(true[j] for j in got) / best_mass if best_mass else 0)
                util.setdefault(f"{mech}_mention_overlap", []).append(len(got & top_ment) / L)
        row.update({k: round(float(np.mean(v)), 3) for k, v in util.items()})
        results.append(row)
        con.close()
    out.write_text(json.dumps(results))


# -- driver ------------------------------------------------------------------------------

def extract(ref: str, where: Path) -> Path:
    """The code of `ref`, importable as dpspin_sql from `where` (queries/udfs linked in)."""
    where.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    for sub in ("queries", "udfs"):
        link = where / "dpspin_sql" / sub
        if not link.exists():
            link.symlink_to(where / sub)
    return where


def table(rows: list[dict]) -> str:
    cols = [("dataset", "dataset"), ("side", "side"), ("scorer", "scorer"), ("m", "m"), ("share", "share"),
            ("share_label", "share (label)"), ("spearman", "Spearman"), ("top1", "top-1"),
            ("top1_assigned", "top-1 assigned"), ("abstained", "abstained"), ("aux_precision", "aux P"),
            ("aux_recall", "aux R"), ("laplace_overlap", "overlap@10 lap"), ("laplace_mass_retained", "mass_ret lap"),
            ("gaussian_overlap", "overlap@10 gau"), ("gaussian_mass_retained", "mass_ret gau"),
            ("private_topL_overlap", "overlap@10 topL"), ("private_topL_mass_retained", "mass_ret topL"),
            ("laplace_mention_overlap", "truth overlap@10 lap")]
    cols = [(k, h) for k, h in cols if any(r.get(k) is not None for r in rows)]
    out = ["| " + " | ".join(h for _, h in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join("–" if r.get(k) is None else str(r[k]) for k, _ in cols) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="cfpb,amazon,yelp,amazon2018")
    ap.add_argument("--scorers", default="default,similarity",
                    help="after: default (auto) and others; before runs its default only")
    ap.add_argument("--before", default=BEFORE)
    ap.add_argument("--no-before", action="store_true")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--split-seed", type=int, default=1,
                    help="the seed of `dpspin split` (the README's is 1; others measure on splits nothing was tuned on)")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        side, dataset, scorers, workdir, out = args.child
        child(side, dataset, scorers.split(","), args.seeds, Path(workdir), Path(out), args.split_seed)
        return
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-fidelity-") as tmp:
        sides = [("after", None)] if args.no_before else [("before", extract(args.before, Path(tmp) / "code")),
                                                           ("after", None)]
        for dataset in args.datasets.split(","):
            for side, code in sides:
                work = Path(tmp) / side / dataset
                work.mkdir(parents=True)
                out = work / "result.json"
                env = dict(os.environ)
                if code is not None:
                    env["PYTHONPATH"] = str(code)
                scorers = "default" if side == "before" else args.scorers
                started = time.perf_counter()
                proc = subprocess.run([sys.executable, __file__, "--seeds", str(args.seeds),
                                       "--split-seed", str(args.split_seed), "--child", side, dataset,
                                       scorers, str(work), str(out)], env=env, cwd=tmp, capture_output=True, text=True)
                if proc.returncode != 0:
                    print(f"{side} {dataset} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
                    continue
                got = json.loads(out.read_text())
                rows += got
                print(f"{side} {dataset}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
                for r in got:
                    print(json.dumps(r), flush=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
