"""Throughput of `dpspin assign` on 100,000 target records, m=200 atoms, K=3.

Synthetic corpus (seeded): 200 two-word topics; each record mentions one or two topics
among filler words; a 20,000-record auxiliary split carries the topic as metadata so the
metadata builder gives m=200 and every scorer can be fitted. Each scorer runs in its
own process so peak RSS is its own. Reports, never asserts.

The machine is shared, so one run is noise: `--repeat N` runs every (source, scorer)
child N times, interleaved, and prints the medians. `--baseline DIR` runs the same
children against another source tree (e.g. `git archive main | tar -x -C DIR`, with
`dpspin_sql/queries` and `dpspin_sql/udfs` linked to `queries/` and `udfs/`) side by side.

    .venv/bin/python bench/bench_assign.py [--records 100000] [--scorers keyword,similarity,supervised]
                                           [--repeat 3] [--baseline DIR] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa


def words(rng, n: int) -> list[str]:
    syll = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "gu", "be", "fi", "ho"]
    out = set()
    while len(out) < n:
        out.add("".join(rng.choice(syll, size=rng.integers(2, 4))))
    return sorted(out)


def make_store(path: Path, n_target: int, n_aux: int, m: int, seed: int = 0) -> None:
    from dpspin_sql import builders, store

    rng = np.random.default_rng(seed)
    vocab = words(rng, 3000)
    topics = [f"{vocab[2 * j]} {vocab[2 * j + 1]}" for j in range(m)]
    filler = vocab[2 * m:]
    n = n_target + n_aux
    weights = 1.0 / np.arange(1, m + 1)
    first = rng.choice(m, size=n, p=weights / weights.sum())
    second = rng.integers(0, m, size=n)
    fill = rng.choice(len(filler), size=(n, 25))
    texts = [" ".join([topics[first[i]]] + [filler[k] for k in fill[i, :12]] + [topics[second[i]]]
                      + [filler[k] for k in fill[i, 12:]]) for i in range(n)]
    con = store.connect(path, create=True)
    table = pa.table({"record_id": [f"r{i:07d}" for i in range(n)], "text": texts,
                      "split": ["aux" if i < n_aux else "target" for i in range(n)],
                      "metadata": [json.dumps({"topic": topics[first[i]]}) for i in range(n)]})
    con.register("bench_rows", table)
    con.execute("INSERT INTO records (record_id, user_id, text, split, metadata) "
                "SELECT record_id, NULL, text, split, CAST(metadata AS JSON) FROM bench_rows")
    con.unregister("bench_rows")
    builders.build(con, "metadata", fields=["topic"], m=m)
    con.close()


def _cpu() -> float:
    """CPU seconds of this process, all threads (robust to other load on a shared machine)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_one(db: Path, scorer: str, K: int, workers: int | None = None) -> dict:
    import shutil

    from dpspin_sql import assign, store

    work = db.with_name(f"{db.stem}-{scorer}-{time.monotonic_ns()}.duckdb")
    shutil.copyfile(db, work)          # every child starts from the same store
    con = store.connect(work)
    t0 = time.perf_counter()
    fitted = assign.fit_scorer(con, scorer)
    fit_s = time.perf_counter() - t0
    cpu0 = _cpu()
    report = assign.assign(con, fitted, K=K, **({"workers": workers} if workers else {}))
    cpu_s = _cpu() - cpu0
    total = time.perf_counter() - t0
    apply_s = total - fit_s
    return {"scorer": scorer, "workers": workers, "records": report.n_records, "m": report.m, "K": K,
            "fit_s": round(fit_s, 2), "assign_s": round(apply_s, 2),
            "records_per_s": round(report.n_records / apply_s), "cpu_s": round(cpu_s, 2),
            "records_per_cpu_s": round(report.n_records / cpu_s), "rows": report.n_rows,
            "unassigned": report.n_unassigned,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def _child(db: Path, scorer: str, K: int, src: str | None, workers: int | None = None) -> dict:
    cmd = [sys.executable, __file__, "--child", str(db), scorer, "-K", str(K)]
    if workers:
        cmd += ["--workers", str(workers)]
    if src:
        cmd += ["--src", src]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"child {scorer} ({src or 'this tree'}) failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--aux", type=int, default=20_000)
    ap.add_argument("-m", type=int, default=200)
    ap.add_argument("-K", type=int, default=3)
    ap.add_argument("--scorers", default="keyword,similarity,supervised")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--baseline", help="another source tree to run side by side")
    ap.add_argument("--json", type=Path, help="also write every run and the medians here")
    ap.add_argument("--workers", default="", help="comma-separated values of assign(workers=…) to compare "
                                                  "(this tree only; default: its default)")
    ap.add_argument("--child", nargs=2, metavar=("DB", "SCORER"))
    ap.add_argument("--src", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.src:
            sys.path.insert(0, args.src)
        kw = {"workers": int(args.workers)} if args.workers else {}
        print(json.dumps(run_one(Path(args.child[0]), args.child[1], args.K, **kw)))
        return
    sources = [("baseline", str(Path(args.baseline).resolve()), None)] if args.baseline else []
    sources += [(f"workers={w}" if w else "this tree", None, int(w) if w else None)
                for w in (args.workers.split(",") if args.workers else [""])]
    runs: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        t = time.perf_counter()
        make_store(db, args.records, args.aux, args.m)
        print(f"synthetic store: {args.records} target + {args.aux} aux records, m={args.m} "
              f"({time.perf_counter() - t:.1f}s)")
        for rep in range(args.repeat):
            for scorer in args.scorers.split(","):
                for name, src, workers in sources:
                    res = dict(_child(db, scorer, args.K, src, workers), source=name, repeat=rep)
                    runs.append(res)
                    print(json.dumps(res), flush=True)
    medians = []
    for scorer in args.scorers.split(","):
        for name, _, _ in sources:
            mine = [r for r in runs if r["scorer"] == scorer and r["source"] == name]
            medians.append({"scorer": scorer, "source": name, "runs": len(mine),
                            **{key: float(np.median([r[key] for r in mine]))
                               for key in ("records_per_s", "records_per_cpu_s", "fit_s", "assign_s",
                                                         "peak_rss_mb")}})
    print(f"\nmedians over {args.repeat} run(s), K={args.K}, m={args.m}, {args.records} records:")
    print(f"{'scorer':12s} {'source':10s} {'records/s':>10s} {'per CPU s':>10s} {'assign s':>9s} {'fit s':>7s} "
          f"{'peak RSS MB':>12s}")
    for r in medians:
        print(f"{r['scorer']:12s} {r['source']:10s} {r['records_per_s']:10,.0f} {r['records_per_cpu_s']:10,.0f} "
              f"{r['assign_s']:9.2f} {r['fit_s']:7.2f} {r['peak_rss_mb']:12,.0f}")
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "medians": medians}, indent=1))


if __name__ == "__main__":
    main()
